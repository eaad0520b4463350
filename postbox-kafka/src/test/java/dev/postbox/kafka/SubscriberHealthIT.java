package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.Tags;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 #3: an {@code AT_MOST_ONCE} subscriber whose commit before handling meets a rebalance
 * goes on (the poll's records are read again, never handled twice), and a poll loop that dies shows
 * in {@link KafkaSubscriber#state()} and in the {@code postbox.consumer.poll.loop.alive} gauge.
 */
@PostboxTest
class SubscriberHealthIT extends Subscribers {

  @Test
  void anAtMostOnceCommitThatFailsInARebalanceSkipsThePollAndTheSubscriberGoesOn(
      PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 2);
    String group = "amo-rebalance";
    Subscription sub =
        Subscription.builder(group).topics(topic).guarantee(DeliveryGuarantee.AT_MOST_ONCE).build();
    Map<String, List<String>> handledBy = new ConcurrentHashMap<>();
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers())) {
      for (int i = 0; i < 20; i++) {
        fx.publish(Effects.message(topic, "k" + i, i), i % 2);
      }
      BlockingInterceptor.reset();
      KafkaSubscriber a =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .consumerProperty("client.id", "a")
                  .consumerProperty("max.poll.interval.ms", 3_000)
                  .consumerProperty("interceptor.classes", BlockingInterceptor.class.getName())
                  .handler(d ->
                      handledBy
                          .computeIfAbsent(
                              d.message().id().toString(), k -> new CopyOnWriteArrayList<>())
                          .add("a")));
      // a's poll returned records; its poll thread is held before the commit
      assertThat(BlockingInterceptor.held.await(60, TimeUnit.SECONDS)).isTrue();
      KafkaSubscriber b =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .consumerProperty("client.id", "b")
                  .handler(d ->
                      handledBy
                          .computeIfAbsent(
                              d.message().id().toString(), k -> new CopyOnWriteArrayList<>())
                          .add("b")));
      // a, held longer than its max.poll.interval.ms, left the group: b owns both partitions, and
      // a's commit before handling is from a generation that is gone (CommitFailedException)
      await().atMost(Duration.ofSeconds(60)).until(() -> b.assignment().size() == 2);
      BlockingInterceptor.release.countDown();
      await()
          .atMost(Duration.ofSeconds(90))
          .until(() -> a.assignment().size() == 1 && b.assignment().size() == 1);
      await().atMost(Duration.ofSeconds(60)).until(() -> handledBy.size() == 20);
      // a still consumes its partition: messages published after the rebalance reach it
      for (int i = 20; i < 40; i++) {
        fx.publish(Effects.message(topic, "k" + i, i), i % 2);
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> handledBy.size() == 40);
      assertThat(handledBy.values()).allSatisfy(who -> assertThat(who).hasSize(1));
      assertThat(handledBy.values().stream().filter(who -> who.contains("a")).count())
          .as("records a handled after it rejoined")
          .isGreaterThanOrEqualTo(10);
      assertThat(a.stats().received()).as("a read the held poll's records").isPositive();
      SubscriberState state = a.state();
      assertThat(state.healthy()).isTrue();
      assertThat(state.failure()).isEmpty();
      assertThat(state.assignment()).hasSize(1);
      assertThat(state.lastPoll()).isPresent();
    }
  }

  @Test
  void aPollLoopThatDiesShowsInTheStateAndTheMetric(PostboxTestContext ctx) throws Exception {
    String topic = ctx.topic("orders", 2);
    String group = "dies";
    Subscription sub = Subscription.builder(group).topics(topic).build();
    Tags tags = Tags.of("group", group);
    RecordingMetrics first = new RecordingMetrics();
    KafkaSubscriber a =
        start(
            KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                .consumerProperty("group.instance.id", "the-one")
                .metrics(first)
                .handler(d -> {}));
    await().atMost(Duration.ofSeconds(60)).until(() -> a.assignment().size() == 2);
    assertThat(a.state().healthy()).isTrue();
    assertThat(first.gauge(MetricName.CONSUMER_POLL_LOOP_ALIVE, tags)).isEqualTo(1.0);
    // a second process with the same static member id: the group fences one of them for good
    RecordingMetrics second = new RecordingMetrics();
    KafkaSubscriber b =
        start(
            KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                .consumerProperty("group.instance.id", "the-one")
                .metrics(second)
                .handler(d -> {}));
    await().atMost(Duration.ofSeconds(90)).until(() -> !a.state().alive() || !b.state().alive());
    KafkaSubscriber dead = a.state().alive() ? b : a;
    RecordingMetrics deadMetrics = dead == a ? first : second;
    SubscriberState state = dead.state();
    assertThat(state.running()).as("started and not closed").isTrue();
    assertThat(state.alive()).isFalse();
    assertThat(state.healthy()).isFalse();
    assertThat(state.failure()).get().isInstanceOf(FencedInstanceIdException.class);
    assertThat(deadMetrics.gauge(MetricName.CONSUMER_POLL_LOOP_ALIVE, tags)).isEqualTo(0.0);
    assertThat(deadMetrics.gauge(MetricName.CONSUMER_MEMBERSHIP_FENCED, tags)).isEqualTo(0.0);
  }
}
