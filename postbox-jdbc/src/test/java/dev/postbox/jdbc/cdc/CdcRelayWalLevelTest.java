package dev.postbox.jdbc.cdc;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.PostgresServer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** A dedicated embedded server (not the shared one) at {@code wal_level=replica}. */
@Tag("integration")
class CdcRelayWalLevelTest {

  @Test
  void refusesToStartWhenTheServerCannotDecodeLogically() {
    try (PostgresServer pg =
        PostgresServer.builder().serverConfig("wal_level", "replica").build()) {
      pg.start();
      String schema = pg.createSchema("cdc_wal_level");
      try (HikariDataSource ds = pg.dataSource(schema, 2)) {
        PostboxMigrations.migrate(ds);
        CdcRelay relay = CdcRelay.builder(ds, pg.jdbcUrl(schema), new RecordingPublisher()).build();
        assertThatThrownBy(relay::start)
            .isInstanceOf(OutboxException.class)
            .hasMessageContaining("wal_level is replica")
            .hasMessageContaining("wal_level = logical");
        relay.close();
      }
    }
  }
}
