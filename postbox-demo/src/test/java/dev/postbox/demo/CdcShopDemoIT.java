package dev.postbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.testkit.PostboxInfrastructure;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./postbox demo --relay cdc}, short, in both outbox modes: two CDC relay processes (one
 * streams the slot, one stands by; the streaming one is halted between the broker's ack and the
 * slot confirm, a standby takes over), the inventory process halted once, poison messages and their
 * replay; no warehouse outage (that exercises the consumer, which {@link ShopDemoIT} covers). The
 * same invariants as the polling relay's demo, and the report names the relay and the outbox.
 */
// a whole campaign/demo run in one method: longer than the default 10 minutes per test
@Timeout(value = 20, unit = TimeUnit.MINUTES)
class CdcShopDemoIT {

  // warm-up, orders, other customers' orders during the failures phase (at least 50), wholesale
  // orders, unknown-product orders
  private static final long ORDERS = 200 + 300 + 50 + 30 + 3;

  @Test
  void theCdcRelayOnOutboxRowsLosesNothingAndKeepsOrderThroughARelayCrash(@TempDir Path dir)
      throws Exception {
    check(run(RelayMode.CDC_TABLE, dir), dir, "table");
  }

  @Test
  void theCdcRelayOnLogicalMessagesLosesNothingAndKeepsOrderThroughARelayCrash(@TempDir Path dir)
      throws Exception {
    check(run(RelayMode.CDC_EMIT, dir), dir, "emit");
  }

  private static Run run(RelayMode mode, Path dir) throws Exception {
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    DemoReport report =
        new ShopDemo(
                new ShopDemo.Options(300, 30, 3, 2, 1000, 3, 150, Duration.ofMinutes(2), dir, 0),
                new PrintStream(log, true, StandardCharsets.UTF_8),
                ShopTransport.Kind.KAFKA,
                mode)
            .run();
    return new Run(report, log.toString(StandardCharsets.UTF_8));
  }

  private record Run(DemoReport report, String output) {}

  private static void check(Run run, Path dir, String outbox) throws Exception {
    DemoReport report = run.report();
    String output = run.output();
    assertThat(report.relay()).isEqualTo("cdc");
    assertThat(report.outbox()).isEqualTo(outbox);
    assertThat(report.relayCrashes())
        .as("one halt: only the streaming relay is armed\n%s", output)
        .isEqualTo(1);
    assertThat(output).contains("halted at crash point cdc.after-ack-before-mark");
    assertThat(report.consumerCrashes()).as(output).isEqualTo(1);
    assertThat(report.missing()).as(output).isZero();
    assertThat(report.orderViolations()).as(output).isZero();
    assertThat(report.unexpected()).isZero();
    assertThat(report.orders()).isEqualTo(ORDERS);
    // + malformed and schema-version-3 poison (no order rows) + the backlog
    assertThat(report.committed()).isEqualTo(ORDERS + 4 + 1000);
    assertThat(report.published()).isEqualTo(report.committed());
    assertThat(report.topicDuplicates())
        .as("every order.created is published twice")
        .isGreaterThanOrEqualTo(200 + 300);

    assertThat(report.effectsApplied()).as(output).isEqualTo(report.orders());
    assertThat(report.duplicateEffects()).isZero();
    assertThat(report.duplicatesSuppressed()).isGreaterThanOrEqualTo(200 + 300);
    assertThat(report.stockActual()).isEqualTo(report.stockExpected());
    assertThat(report.poisonSent()).isEqualTo(7);
    assertThat(report.deadLetteredBeforeReplay()).as(output).isEqualTo(7);
    assertThat(report.replayed()).as(output).isEqualTo(3);
    assertThat(report.appliedAfterReplay()).isEqualTo(3);
    assertThat(report.deadLettered()).isEqualTo(4);
    assertThat(report.relayEventsPerS()).isPositive();
    assertThat(report.ok()).as(report.toText() + "\n" + output).isTrue();
    assertThat(report.inconclusive()).isFalse();

    Path json = dir.resolve("report.json");
    report.writeJson(json);
    JsonNode node = new ObjectMapper().readTree(Files.readString(json));
    assertThat(node.get("relay").asText()).isEqualTo("cdc");
    assertThat(node.get("outbox").asText()).isEqualTo(outbox);
    assertThat(node.get("missing").asLong()).isZero();
    assertThat(node.get("order_violations").asLong()).isZero();
    assertThat(node.has("publish_latency_ms_p99")).isTrue();

    // the demo drops its slot: a slot nobody reads would keep the server's WAL
    try (HikariDataSource ds = PostboxInfrastructure.shared().postgres().dataSource("public");
        Connection c = ds.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'postbox_cdc_shop%'")) {
      rs.next();
      assertThat(rs.getLong(1)).isZero();
    }
  }
}
