package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.OffsetStore;
import dev.postbox.kafka.internal.ConsumerSettings;
import java.sql.Connection;
import java.time.Duration;
import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.GroupProtocol;
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

  /**
   * Kafka's 5 minutes would leave a subscriber fetching nothing from a partition leader cut off
   * from the other brokers for that long (KafkaClusterFailoverIT cuts one off).
   */
  @Test
  void metadataIsRefreshedEveryTenSecondsUnlessTheUserSaysOtherwise() {
    KafkaSubscriber s =
        KafkaSubscriber.builder("127.0.0.1:1", subscription().build()).handler(d -> {}).build();
    assertThat(s.consumerConfig()).containsEntry(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 10_000);
    KafkaSubscriber own =
        KafkaSubscriber.builder("127.0.0.1:1", subscription().build())
            .consumerProperty(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 60_000)
            .handler(d -> {})
            .build();
    assertThat(own.consumerConfig()).containsEntry(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 60_000);
  }

  /** Never called: the builder only checks that it fits the subscription. */
  private static final OffsetStore UNUSED_STORE =
      new OffsetStore() {
        @Override
        public OptionalLong nextOffset(String group, String topic, int partition) {
          throw new UnsupportedOperationException();
        }

        @Override
        public boolean applyAt(
            String group, String topic, int partition, long offset, InboxStore.Work work) {
          throw new UnsupportedOperationException();
        }

        @Override
        public boolean advanceVersion(Connection connection, String entity, long version) {
          throw new UnsupportedOperationException();
        }
      };

  @Test
  void anOffsetStoreNeedsPartitionOrderAndNoInboxParkingOrRetryTopics() {
    Subscription.Builder eo =
        subscription().guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE).ordering(Ordering.PARTITION);
    assertThat(
            KafkaSubscriber.builder("127.0.0.1:1", eo.build())
                .offsetStore(UNUSED_STORE)
                .handler(d -> {})
                .build())
        .isNotNull();
    assertThatThrownBy(() ->
            KafkaSubscriber.builder("127.0.0.1:1", eo.ordering(Ordering.KEY).build())
                .offsetStore(UNUSED_STORE)
                .handler(d -> {})
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PARTITION");
    assertThatThrownBy(() ->
            KafkaSubscriber.builder("127.0.0.1:1", eo.ordering(Ordering.PARTITION).build())
                .offsetStore(UNUSED_STORE)
                .retryTopics(Duration.ofSeconds(1))
                .handler(d -> {})
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("out of offset order");
    assertThatThrownBy(() ->
            KafkaSubscriber.builder(
                    "127.0.0.1:1", subscription().ordering(Ordering.PARTITION).build())
                .offsetStore(UNUSED_STORE)
                .handler(d -> {})
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("EFFECTIVELY_ONCE");
  }

  /** Retry topics are named after the subscription: its name must make legal topic names. */
  @Test
  void retryTopicsNeedASubscriptionNameThatMakesLegalTopicNames() {
    assertThatThrownBy(() ->
            KafkaSubscriber.builder(
                    "127.0.0.1:1", Subscription.builder("billing team").topics("t").build())
                .retryTopics(Duration.ofSeconds(1))
                .handler(d -> {})
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("subscription 'billing team'")
        .hasMessageContaining("retryTopics")
        .hasMessageContaining("'<topic>.billing team.retry.<n>'");
    String longest = "t".repeat(233); // + ".billing.retry.1": 249, Kafka's limit
    assertThat(
            KafkaSubscriber.builder(
                    "127.0.0.1:1", Subscription.builder("billing").topics(longest).build())
                .retryTopics(Duration.ofSeconds(1))
                .handler(d -> {})
                .build())
        .isNotNull();
    assertThatThrownBy(() ->
            KafkaSubscriber.builder(
                    "127.0.0.1:1", Subscription.builder("billing").topics(longest + "t").build())
                .retryTopics(Duration.ofSeconds(1))
                .handler(d -> {})
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("subscription 'billing': retryTopics")
        .hasMessageContaining("'" + longest + "t.billing.retry.1' (250 characters)");
  }

  @Test
  void theConsumerGroupProtocolDropsTheClientSideAssignor() {
    KafkaSubscriber s =
        KafkaSubscriber.builder("127.0.0.1:1", subscription().build())
            .groupProtocol(GroupProtocol.CONSUMER)
            .handler(d -> {})
            .build();
    assertThat(s.consumerConfig())
        .containsEntry(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer")
        .doesNotContainKey(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG);
  }

  @Test
  void aTransformerIsEffectivelyOnceAndNeedsATransform() {
    assertThatThrownBy(
            () -> KafkaTransformer.builder("127.0.0.1:1", subscription().build()).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("transform");
    assertThatThrownBy(() ->
            KafkaTransformer.builder("127.0.0.1:1", subscription().build())
                .transform((in, out) -> {})
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("EFFECTIVELY_ONCE");
  }
}
