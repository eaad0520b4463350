package dev.postbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo, small: relay processes (one halted between ack and mark, all publishing each
 * order.created twice), the inventory process (halted once between an effect's commit and its
 * offset commit), poison messages (dead-lettered, the fixable ones replayed after the fix), a
 * warehouse outage of 15 s (wholesale keys parked, drained in order; shorter outages ended before a
 * slow CI machine delivered the wholesale orders, and no key parked), the payments process
 * answering the wholesale orders' charge requests (halted once between a charge and its reply;
 * requests sent again; some timed out) and the published JSON report.
 */
// a whole campaign/demo run in one method: longer than the default 10 minutes per test
@Timeout(value = 20, unit = TimeUnit.MINUTES)
class ShopDemoIT {

  @Test
  void theShopLosesNothingKeepsOrderAndAppliesEachOrderOnceThroughCrashes(@TempDir Path dir)
      throws Exception {
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    DemoReport report =
        new ShopDemo(
                new ShopDemo.Options(600, 30, 3, 2, 2000, 3, 150, Duration.ofMinutes(2), dir, 15),
                new PrintStream(log, true, StandardCharsets.UTF_8))
            .run();
    String output = log.toString(StandardCharsets.UTF_8);
    assertThat(report.relayCrashes()).as(output).isEqualTo(1);
    assertThat(report.consumerCrashes()).as(output).isEqualTo(1);
    assertThat(report.missing()).isZero();
    assertThat(report.orderViolations()).isZero();
    assertThat(report.unexpected()).isZero();
    // warm-up, orders, other customers' orders during the outage (orders / 10, at least 50),
    // wholesale orders, unknown-product orders
    long orders = 200 + 600 + 60 + 30 + 3;
    assertThat(report.orders()).isEqualTo(orders);
    // + malformed and schema-version-3 poison (no order rows) + the backlog
    assertThat(report.committed()).isEqualTo(orders + 4 + 2000);
    assertThat(report.published()).isEqualTo(report.committed());
    assertThat(report.topicDuplicates())
        .as("every order.created is published twice")
        .isGreaterThanOrEqualTo(200 + 600);

    assertThat(report.effectsApplied()).as(output).isEqualTo(report.orders());
    assertThat(report.duplicateEffects()).isZero();
    assertThat(report.duplicatesSuppressed()).isGreaterThanOrEqualTo(200 + 600);
    assertThat(report.duplicatesDelivered())
        .isEqualTo(report.duplicatesSuppressed() + report.duplicateEffects());
    assertThat(report.stockActual()).isEqualTo(report.stockExpected());
    assertThat(report.stockExpected()).isLessThan(51 * 10_000L); // 50 products + the one fixed
    assertThat(report.ok()).as(report.toText()).isTrue();
    assertThat(report.inconclusive()).isFalse();
    assertThat(report.relayEventsPerS()).isPositive();

    assertThat(report.poisonSent()).isEqualTo(7);
    assertThat(report.deadLetteredBeforeReplay()).as(output).isEqualTo(7);
    assertThat(report.replayed()).as(output).isEqualTo(3);
    assertThat(report.appliedAfterReplay()).isEqualTo(3);
    assertThat(report.deadLettered()).as("malformed JSON and schema version 3 stay").isEqualTo(4);
    assertThat(report.parkedKeys()).as(output).isPositive();
    assertThat(report.parkedOrderViolations()).isZero();

    System.out.println(output);
    System.out.println(report.toText());
    Path json = dir.resolve("report.json");
    report.writeJson(json);
    JsonNode node = new ObjectMapper().readTree(Files.readString(json));
    for (String key :
        new String[] {
          "committed",
          "published",
          "missing",
          "order_violations",
          "topic_duplicates",
          "relay_events_per_s",
          "publish_latency_ms_p99",
          "relay_crashes",
          "ok",
          "effects_applied",
          "duplicates_suppressed",
          "duplicate_effects",
          "stock_expected",
          "stock_actual",
          "poison_sent",
          "dead_lettered",
          "replayed",
          "applied_after_replay",
          "parked_order_violations"
        }) {
      assertThat(node.has(key)).as(key).isTrue();
    }
    assertThat(node.get("effects_applied").asLong()).isEqualTo(orders);
    assertThat(node.get("stock_actual").asLong()).isEqualTo(node.get("stock_expected").asLong());
    PaymentsChecks.check(report, node, output);
  }
}
