package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.relay.Relay;
import dev.postbox.testkit.DeliveryHistory;
import dev.postbox.testkit.KafkaCluster;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The relay on a three-broker cluster whose partitions' in-sync replicas fall below {@code
 * min.insync.replicas=2}: two of the three brokers killed. The cluster has a dedicated controller,
 * because with every broker also a controller, two dead nodes are a lost quorum: the ISR could not
 * shrink and the brokers would time out instead of refusing writes.
 */
@PostboxTest
class KafkaClusterMinIsrIT {

  private static KafkaCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = KafkaCluster.builder().dedicatedController(true).build();
    cluster.start();
  }

  @AfterAll
  static void closeCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void theRelayMarksNothingWhileTheIsrIsBelowTheMinimumAndDrainsInOrderOnceABrokerIsBack(
      PostboxTestContext ctx) throws Exception {
    String topic = ClusterRelays.topic(cluster, "orders", 3);
    Shop shop = new Shop(ctx.dataSource(), topic);
    ClusterRelays.Seen seen = new ClusterRelays.Seen(Long.MAX_VALUE, n -> {});
    String probe = ClusterRelays.topic(cluster, "probe", 1);
    CapturedStderr captured = null;
    try (Relay relay =
        ClusterRelays.start(ctx.dataSource(), cluster, Duration.ofSeconds(5), seen)) {
      for (int i = 0; i < 300; i++) {
        shop.orderAndRecord("k" + (i % 20));
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> relay.stats().published() == 300);

      int survivor = cluster.leaderOf(topic, 0).orElseThrow();
      List<Integer> dead = new ArrayList<>(List.of(0, 1, 2));
      dead.remove(Integer.valueOf(survivor));
      dead.forEach(cluster::kill);
      for (int p = 0; p < 3; p++) {
        int partition = p;
        await()
            .atMost(Duration.ofSeconds(60))
            .ignoreExceptions()
            .until(() -> cluster.inSyncReplicas(topic, partition).equals(Set.of(survivor)));
      }
      await()
          .atMost(Duration.ofSeconds(60))
          .ignoreExceptions()
          .until(() -> cluster.inSyncReplicas(probe, 0).equals(Set.of(survivor)));
      assertThatThrownBy(() -> sendOnce(probe))
          .as("the brokers refuse acks=all writes")
          .hasRootCauseInstanceOf(NotEnoughReplicasException.class);

      captured = new CapturedStderr();
      long failuresBefore = relay.stats().publishFailures();
      for (int i = 0; i < 300; i++) {
        shop.orderAndRecord("k" + (i % 20));
      }
      // two failed rounds of the first batch at least: a send and the retry after the backoff
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> relay.stats().publishFailures() >= failuresBefore + 200);
      captured.close();
      assertThat(relay.stats().published()).as("nothing marked").isEqualTo(300);
      assertThat(shop.pendingRows()).isEqualTo(300);
      assertThat(seen.acknowledged.get()).isEqualTo(300);
      assertThat(captured.text())
          .as("the producer's log names the cause")
          .contains("NOT_ENOUGH_REPLICAS");
      assertThat(seen.failures)
          .as("the relay's failures name the cause, not only the producer's timeout")
          .anySatisfy(e ->
              assertThat(e)
                  .isInstanceOf(NotEnoughReplicasException.class)
                  .hasMessageContaining("below min.insync.replicas=2")
                  .hasCauseInstanceOf(org.apache.kafka.common.errors.TimeoutException.class));
      assertThat(captured.text())
          .as("Postbox's own log names it")
          .contains("records expired in the producer: partition " + topic + "-");

      cluster.start(dead.get(0));
      DeliveryHistory.Report report =
          shop.readAndCheck(cluster.bootstrapServers(), Duration.ofSeconds(120));
      System.out.printf(
          "ISR below the minimum: %s; relay %s; failure types %s%n",
          report,
          relay.stats(),
          seen.failures.stream().map(e -> e.getClass().getSimpleName()).distinct().toList());
      assertThat(report.committed()).isEqualTo(600);
      assertThat(report.missing()).isZero();
      assertThat(report.unexpected()).isZero();
      assertThat(report.orderViolations()).isZero();
      await().atMost(Duration.ofSeconds(60)).until(() -> shop.pendingRows() == 0);
    } finally {
      if (captured != null) {
        captured.close();
      }
      cluster.heal();
    }
  }

  /** One acks=all send without retries, so the broker's own answer reaches the caller. */
  private static void sendOnce(String topic) throws Exception {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrapServers());
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
    p.put(ProducerConfig.RETRIES_CONFIG, 0);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      producer
          .send(new ProducerRecord<>(topic, "probe".getBytes(StandardCharsets.UTF_8)))
          .get(60, TimeUnit.SECONDS);
    }
  }
}
