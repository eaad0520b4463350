package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher.PendingPublish;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Batches sent one behind the other on one producer ({@code sendAfter}): awaited as idle, a batch
 * is sent at once even with a batch behind it, instead of lingering ({@code linger.ms}).
 */
@PostboxTest
class PipelinedPublishIT {

  /** A linger no test waits out: a batch awaited without a flush would sit for ten minutes. */
  private static final int LINGER_MS = 600_000;

  @Test
  void aFollowedBatchAwaitedAsIdleIsSentWithoutWaitingForTheLinger(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("pipelined", 2);
    try (KafkaRelayPublisher publisher =
        KafkaRelayPublisher.builder(ctx.bootstrapServers())
            .producerProperty("linger.ms", LINGER_MS)
            .deliveryTimeout(Duration.ofMillis(LINGER_MS + 120_000))
            .build()) {
      PendingPublish first = publisher.send(messages(topic, "a", 3));
      PendingPublish second = publisher.sendAfter(first, messages(topic, "b", 3));

      List<PublishOutcome> firstOutcomes =
          assertTimeoutPreemptively(Duration.ofSeconds(60), first::outcomesWhenIdle);
      List<PublishOutcome> secondOutcomes =
          assertTimeoutPreemptively(Duration.ofSeconds(60), second::outcomes);

      assertThat(firstOutcomes).hasSize(3).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
      assertThat(secondOutcomes).hasSize(3).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
    }
  }

  private static List<Message> messages(String topic, String key, int n) {
    List<Message> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(Message.builder(topic, "pipelined").key(key + i).jsonPayload("{}").build());
    }
    return out;
  }
}
