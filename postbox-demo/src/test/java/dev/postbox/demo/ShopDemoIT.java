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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo, small: relay processes, one halted between ack and mark, and the published JSON report.
 */
class ShopDemoIT {

  @Test
  void theShopLosesNothingAndKeepsOrderThroughARelayCrash(@TempDir Path dir) throws Exception {
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    DemoReport report =
        new ShopDemo(
                new ShopDemo.Options(600, 30, 3, 2, 2000, 3, Duration.ofMinutes(2), dir),
                new PrintStream(log, true, StandardCharsets.UTF_8))
            .run();
    assertThat(report.relayCrashes()).as(log.toString(StandardCharsets.UTF_8)).isEqualTo(1);
    assertThat(report.missing()).isZero();
    assertThat(report.orderViolations()).isZero();
    assertThat(report.unexpected()).isZero();
    assertThat(report.committed()).isEqualTo(200 + 600 + 2000);
    assertThat(report.published()).isEqualTo(report.committed());
    assertThat(report.ok()).isTrue();
    assertThat(report.relayEventsPerS()).isPositive();

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
          "publish_latency_ms_p99"
        }) {
      assertThat(node.has(key)).as(key).isTrue();
    }
  }
}
