package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresParkingStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * Ordered parking in PostgreSQL on RabbitMQ: a key whose in-place retries ran out is parked with
 * every later message of its key, in order, while other keys flow on; once its dependency is back
 * the parked sequence is applied in order, effectively once.
 */
@PostboxTest
class RabbitParkingIT {

  @Test
  void aFailingKeyIsParkedInOrderWhileOthersFlowAndIsAppliedInOrderAfterwards(
      PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    String topic = "parking-" + UUID.randomUUID();
    Subscription sub =
        Subscription.builder("parking-" + UUID.randomUUID().toString().substring(0, 8))
            .topics(topic)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .ordering(Ordering.KEY)
            .failureHandler(
                FailureHandlers.of(
                    RetryPolicy.builder()
                        .maxAttempts(2)
                        .backoff(new Backoff(Duration.ofMillis(10), Duration.ofMillis(20), 2, 0))
                        .build()))
            .build();
    AtomicBoolean down = new AtomicBoolean(true);
    Map<String, List<Integer>> applied = new ConcurrentHashMap<>();
    List<Integer> attemptsOfHead = new CopyOnWriteArrayList<>();
    try (RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), sub)
            .shards(2)
            .inbox(PostgresInboxStore.create(ds))
            .parking(PostgresParkingStore.create(ds))
            // retried every 300 ms for up to a minute: never dead-lettered while the test holds
            // the dependency down
            .parkingTiers(
                java.util.Collections.nCopies(200, Duration.ofMillis(300)).toArray(Duration[]::new))
            .handler(d -> {
              String key = d.message().key().orElseThrow();
              int seq = Integer.parseInt(d.message().header("seq").orElseThrow());
              if (key.equals("blocked") && down.get()) {
                if (seq == 0) {
                  attemptsOfHead.add(d.attempt());
                }
                throw new IllegalStateException("warehouse API unavailable");
              }
              applied.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(seq);
            })
            .build()) {
      s.start();
      List<Message> messages = new ArrayList<>();
      for (int seq = 0; seq < 10; seq++) {
        for (String key : List.of("blocked", "a", "b", "c")) {
          messages.add(
              Message.builder(topic, "t")
                  .key(key)
                  .header("seq", Integer.toString(seq))
                  .jsonPayload("{}")
                  .build());
        }
      }
      publish(server, messages);

      // the other keys flow on, complete and in order, while "blocked" waits parked
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() ->
              List.of("a", "b", "c").stream()
                  .allMatch(k -> applied.getOrDefault(k, List.of()).size() == 10));
      assertThat(applied).doesNotContainKey("blocked");
      await().atMost(Duration.ofSeconds(30)).until(() -> s.stats().parked() > 0);
      assertThat(attemptsOfHead).as("in-place attempts before parking").startsWith(1, 2);

      down.set(false);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> applied.getOrDefault("blocked", List.of()).size() == 10);
      List<Integer> inOrder = List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
      assertThat(applied.get("blocked"))
          .as("the parked key, in order, once each")
          .isEqualTo(inOrder);
      for (String k : List.of("a", "b", "c")) {
        assertThat(applied.get(k)).isEqualTo(inOrder);
      }
      assertThat(s.stats().givenUp()).isZero();
      assertThat(s.stats().unparked())
          .as("the parked sequence applied from the store")
          .isPositive();
    }
  }

  @Test
  void parkingNeedsAnOrderedSubscriptionAndIsNotCombinedWithWaitQueues(PostboxTestContext ctx)
      throws Exception {
    PostboxMigrations.migrate(ctx.dataSource());
    Subscription unordered =
        Subscription.builder("u").topics("t").ordering(Ordering.UNORDERED).build();
    assertThatThrownBy(() ->
            RabbitSubscriber.builder("amqp://localhost", unordered)
                .parking(PostgresParkingStore.create(ctx.dataSource()))
                .handler(d -> {})
                .build())
        .hasMessageContaining("KEY or PARTITION");
    assertThatThrownBy(() ->
            RabbitSubscriber.builder("amqp://localhost", unordered)
                .parking(PostgresParkingStore.create(ctx.dataSource()))
                .retryTiers(Duration.ofSeconds(1))
                .handler(d -> {})
                .build())
        .hasMessageContaining("alternatives");
  }

  private static void publish(RabbitMqServer server, List<Message> messages) throws Exception {
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() ->
              p.publish(messages).stream().allMatch(o -> o instanceof PublishOutcome.Acknowledged));
    }
  }
}
