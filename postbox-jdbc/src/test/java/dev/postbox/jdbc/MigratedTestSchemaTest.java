package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/** {@code @PostboxTest(migrate = true)} hands each test a schema that already holds the tables. */
@PostboxTest(migrate = true)
class MigratedTestSchemaTest {

  @Test
  void theSchemaHoldsPostboxTablesBeforeTheTestStarts(PostboxTestContext ctx) throws Exception {
    try (Connection c = ctx.dataSource().getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
                    + " AND table_name IN ('postbox_outbox', 'postbox_inbox')")) {
      rs.next();
      assertThat(rs.getInt(1)).isEqualTo(2);
    }
    assertThat(ctx.migrate()).as("already migrated: nothing pending").isZero();
  }
}
