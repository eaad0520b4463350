package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 #4: a revocation marks every revoked partition before it waits for any running record,
 * so no record of a revoked partition starts once the revocation began, whichever of their slow
 * handlers ends first.
 */
@PostboxTest
class RevocationIT extends Subscribers {

  /** Whether a subscriber's poll thread is inside its revocation callback now. */
  private static boolean revoking(String subscription) {
    return Thread.getAllStackTraces().entrySet().stream()
        .filter(e -> e.getKey().getName().equals("postbox-poll-" + subscription))
        .anyMatch(e ->
            Arrays.stream(e.getValue())
                .anyMatch(f -> f.getMethodName().equals("onPartitionsRevoked")));
  }

  @Test
  void noRecordOfARevokedPartitionStartsAfterTheRevocationBegan(PostboxTestContext ctx)
      throws Exception {
    String topic = ctx.topic("orders", 4);
    String group = "revocation";
    Subscription sub =
        Subscription.builder(group)
            .topics(topic)
            .guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
            .ordering(Ordering.PARTITION)
            .concurrency(8)
            .shutdownTimeout(Duration.ofSeconds(60))
            .build();
    Map<Integer, CountDownLatch> release = new ConcurrentHashMap<>();
    for (int p = 0; p < 4; p++) {
      release.put(p, new CountDownLatch(1));
    }
    Set<Integer> firstRunning = ConcurrentHashMap.newKeySet();
    Set<Integer> secondStartedOnA = ConcurrentHashMap.newKeySet();
    try (Effects fx = new Effects(ctx.dataSource(), ctx.bootstrapServers());
        Admin admin =
            Admin.create(
                Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, ctx.bootstrapServers()))) {
      for (int p = 0; p < 4; p++) {
        fx.publish(Effects.message(topic, "k" + p, 1), p);
        fx.publish(Effects.message(topic, "k" + p, 2), p);
      }
      KafkaSubscriber a =
          start(
              KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
                  .consumerProperty("client.id", "a")
                  .handler(d -> {
                    if (d.offset() == 0) {
                      firstRunning.add(d.partition());
                      Effects.awaitQuietly(release.get(d.partition())); // a slow handler
                    } else {
                      secondStartedOnA.add(d.partition());
                    }
                  }));
      await().atMost(Duration.ofSeconds(60)).until(() -> firstRunning.size() == 4);
      start(
          KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
              .consumerProperty("client.id", "b")
              .handler(d -> {}));
      // a gives two partitions to b: its revocation callback waits for their slow handlers
      await().atMost(Duration.ofSeconds(60)).until(() -> revoking(group));
      MemberDescription am =
          admin
              .describeConsumerGroups(List.of(group))
              .describedGroups()
              .get(group)
              .get(10, TimeUnit.SECONDS)
              .members()
              .stream()
              .filter(m -> m.clientId().equals("a"))
              .findFirst()
              .orElseThrow();
      TreeSet<Integer> revoked = new TreeSet<>(List.of(0, 1, 2, 3));
      am.assignment().topicPartitions().stream()
          .map(TopicPartition::partition)
          .forEach(revoked::remove);
      assertThat(revoked).hasSize(2);
      // the revoked partition waited for last ends first: its next record must not start here
      int last = revoked.last();
      release.get(last).countDown();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> a.stats().abandoned() > 0 || secondStartedOnA.contains(last));
      assertThat(secondStartedOnA)
          .as("records of revoked partitions started on a after the revocation began")
          .doesNotContainAnyElementsOf(revoked);
      release.values().forEach(CountDownLatch::countDown);
      await().atMost(Duration.ofSeconds(60)).until(() -> a.assignment().size() == 2);
      assertThat(secondStartedOnA).doesNotContainAnyElementsOf(revoked);
    }
  }
}
