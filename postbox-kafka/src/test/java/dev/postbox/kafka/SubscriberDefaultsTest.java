package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.consumer.Subscription;
import dev.postbox.kafka.internal.ConsumerSettings;
import java.time.Duration;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.junit.jupiter.api.Test;

/** Consumer defaults that a subscriber applies (nothing is started: no broker needed). */
class SubscriberDefaultsTest {

  private static Subscription.Builder subscription() {
    return Subscription.builder("defaults").topics("t");
  }

  /**
   * The rebalance timeout is max.poll.interval.ms: Kafka's 5 minutes let a group sit in
   * PreparingRebalance for minutes after members died in a rebalance (issue 13 #7). Postbox's poll
   * thread never runs handlers, so it needs only the shutdown timeout plus the commit bound.
   */
  @Test
  void maxPollIntervalIsTheShutdownTimeoutPlusAMarginNotKafkasFiveMinutes() {
    KafkaSubscriber s =
        KafkaSubscriber.builder(
                "127.0.0.1:1", subscription().shutdownTimeout(Duration.ofSeconds(10)).build())
            .handler(d -> {})
            .build();
    assertThat(s.consumerConfig())
        .containsEntry(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 40_000);
    assertThat(ConsumerSettings.SYNC_COMMIT_TIMEOUT)
        .as("a revocation's commit fits in the margin")
        .isLessThan(ConsumerSettings.POLL_INTERVAL_MARGIN);
  }

  @Test
  void aMaxPollIntervalSetByTheUserWins() {
    KafkaSubscriber s =
        KafkaSubscriber.builder("127.0.0.1:1", subscription().build())
            .consumerProperty(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 123_456)
            .handler(d -> {})
            .build();
    assertThat(s.consumerConfig())
        .containsEntry(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 123_456);
  }

  @Test
  void theDocumentedConsumerPropertiesAreTheOnesApplied() {
    KafkaSubscriber s =
        KafkaSubscriber.builder("127.0.0.1:1", subscription().build()).handler(d -> {}).build();
    assertThat(s.consumerConfig())
        .containsAllEntriesOf(KafkaSubscriber.DEFAULT_CONSUMER_PROPERTIES);
  }
}
