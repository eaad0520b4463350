package dev.postbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.admin.LagReport;
import dev.postbox.core.consumer.QueueLag;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@code lag --json}'s queue keys are published: the same keys whatever the Java type. */
class QueueLagJsonTest {

  private static JsonNode queues(QueueLag... lags) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Json.print(
        new LagReport(List.of(), List.of(), List.of(lags)),
        new PrintStream(bytes, true, StandardCharsets.UTF_8));
    return new ObjectMapper().readTree(bytes.toString(StandardCharsets.UTF_8)).get("queues");
  }

  @Test
  void theQueueKeysAreThePublishedOnes() throws Exception {
    JsonNode brokerOnly = queues(new QueueLag("s", "orders", 1, "s.orders.1", 12, 0)).get(0);
    assertThat(brokerOnly.fieldNames())
        .toIterable()
        .containsExactlyInAnyOrder(
            "subscription",
            "topic",
            "shard",
            "queue",
            "messages_ready",
            "consumers",
            "oldest_unfinished_age",
            "stalled",
            "idle");
    assertThat(brokerOnly.get("oldest_unfinished_age").isNull()).isTrue();
    assertThat(brokerOnly.get("stalled").asBoolean()).isTrue();
    assertThat(brokerOnly.get("idle").asBoolean()).isFalse();
    assertThat(brokerOnly.get("messages_ready").asLong()).isEqualTo(12);

    JsonNode measured =
        queues(
                new QueueLag(
                    "s", "orders", 0, "s.orders.0", 0, 1, Optional.of(Duration.ZERO), false),
                new QueueLag(
                    "s",
                    "orders",
                    1,
                    "s.orders.1",
                    3,
                    1,
                    Optional.of(Duration.ofMillis(30_500)),
                    false))
            .get(1);
    assertThat(measured.get("oldest_unfinished_age").asDouble()).isEqualTo(30.5);
    assertThat(measured.get("idle").asBoolean()).isFalse();
    assertThat(
            queues(new QueueLag("s", "o", 0, "q", 0, 1, Optional.of(Duration.ZERO), false))
                .get(0)
                .get("idle")
                .asBoolean())
        .isTrue();
  }
}
