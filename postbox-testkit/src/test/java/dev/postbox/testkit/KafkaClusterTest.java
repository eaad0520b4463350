package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** A dedicated three-broker cluster per test, since the tests kill its brokers. */
@Tag("integration")
class KafkaClusterTest {

  @Test
  void theBuilderRefusesFewerThanThreeBrokers() {
    assertThatThrownBy(() -> KafkaCluster.builder().brokers(2).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("brokers");
  }

  @Test
  void aKilledOrFrozenLeaderIsReplacedAndAcknowledgedRecordsSurviveItsRestart() throws Exception {
    // each node in its own network namespace where this user may make them (root: CI), so that the
    // same cluster also checks a leader cut off from the other nodes (see the end)
    Optional<String> noNetworks = KafkaCluster.whyNoOwnNetworks();
    try (KafkaCluster cluster = KafkaCluster.builder().ownNetworks(noNetworks.isEmpty()).build()) {
      assertThatThrownBy(cluster::bootstrapServers).isInstanceOf(IllegalStateException.class);
      cluster.start();
      assertThat(cluster.bootstrapServers().split(",")).hasSize(3);
      cluster.createTopic("durable", 1);
      assertThat(cluster.inSyncReplicas("durable", 0)).containsExactlyInAnyOrder(0, 1, 2);
      int leader = cluster.leaderOf("durable", 0).orElseThrow();

      try (KafkaProducer<String, String> producer = producer(cluster.bootstrapServers())) {
        producer.send(new ProducerRecord<>("durable", "k", "one")).get(30, TimeUnit.SECONDS);
        cluster.kill(leader);
        assertThat(cluster.isRunning(leader)).isFalse();
        // acks=all with two of three replicas left: min.insync.replicas=2 is still met
        producer.send(new ProducerRecord<>("durable", "k", "two")).get(60, TimeUnit.SECONDS);
      }
      int successor = cluster.leaderOf("durable", 0).orElseThrow();
      assertThat(successor).isNotEqualTo(leader);
      assertThat(cluster.inSyncReplicas("durable", 0)).doesNotContain(leader).hasSize(2);

      cluster.start(leader);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> cluster.inSyncReplicas("durable", 0).equals(Set.of(0, 1, 2)));
      cluster.kill(successor); // the restarted broker must hold both records to lead or follow
      assertThat(readAll(cluster.bootstrapServers(), "durable", 2)).containsExactly("one", "two");
      cluster.heal();
      assertThat(cluster.isRunning(successor)).isTrue();
      assertThat(Files.readString(cluster.log(leader))).contains("Kafka Server started");

      // a frozen leader keeps its sockets but misses its heartbeats: the controller moves the lead
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> cluster.inSyncReplicas("durable", 0).equals(Set.of(0, 1, 2)));
      int frozen = cluster.leaderOf("durable", 0).orElseThrow();
      cluster.freeze(frozen);
      assertThat(cluster.isRunning(frozen)).isTrue();
      await()
          .atMost(Duration.ofSeconds(60))
          .ignoreExceptions()
          .until(() -> cluster.leaderOf("durable", 0).orElse(frozen) != frozen);
      cluster.thaw(frozen);
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> cluster.inSyncReplicas("durable", 0).equals(Set.of(0, 1, 2)));

      assumeTrue(noNetworks.isEmpty(), "no leader cut off here: " + noNetworks.orElse(""));
      try (KafkaCluster shared = KafkaCluster.embedded()) {
        assertThatThrownBy(() -> shared.cutOff(0))
            .isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("ownNetworks");
      }
      aLeaderCutOffFromTheOthersIsReplacedAndRejoinsHoldingEveryAcknowledgedRecord(cluster);
    }
  }

  /**
   * A leader cut off from the other nodes still has its clients; it cannot reach the followers
   * (acks=all waits) or the controller quorum (it is fenced and another replica leads, as the other
   * brokers' metadata says). A producer that knows the other brokers has its write acknowledged by
   * the new leader, and the cut-off broker rejoins as a follower holding every acknowledged record.
   */
  private static void aLeaderCutOffFromTheOthersIsReplacedAndRejoinsHoldingEveryAcknowledgedRecord(
      KafkaCluster cluster) throws Exception {
    int isolated = cluster.leaderOf("durable", 0).orElseThrow();
    try (KafkaProducer<String, String> producer = producer(cluster.bootstrapServers())) {
      producer.send(new ProducerRecord<>("durable", "k", "three")).get(30, TimeUnit.SECONDS);
    }
    cluster.cutOff(isolated);
    assertThat(cluster.cutOffNodes()).containsExactly(isolated);
    assertThat(cluster.isRunning(isolated)).isTrue();
    await()
        .atMost(Duration.ofSeconds(60))
        .ignoreExceptions()
        .until(() -> cluster.leaderOf("durable", 0).orElse(isolated) != isolated);
    // bootstrapped on the other brokers: a client whose only connection is the cut-off leader asks
    // it for metadata (Kafka's clients prefer an established connection), and it still names itself
    String others =
        IntStream.range(0, cluster.size())
            .filter(i -> i != isolated)
            .mapToObj(i -> cluster.bootstrapServers().split(",")[i])
            .collect(Collectors.joining(","));
    Properties patient = new Properties();
    patient.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
    try (KafkaProducer<String, String> producer = producer(others, patient)) {
      producer.send(new ProducerRecord<>("durable", "k", "four")).get(150, TimeUnit.SECONDS);
    }
    int successor = cluster.leaderOf("durable", 0).orElseThrow();
    assertThat(successor).isNotEqualTo(isolated);
    assertThat(cluster.inSyncReplicas("durable", 0)).doesNotContain(isolated);
    cluster.reconnect(isolated);
    assertThat(cluster.cutOffNodes()).isEmpty();
    await()
        .atMost(Duration.ofSeconds(90))
        .ignoreExceptions()
        .until(() -> cluster.inSyncReplicas("durable", 0).equals(Set.of(0, 1, 2)));
    cluster.kill(successor); // the rejoined broker must hold every acknowledged record
    assertThat(readAll(cluster.bootstrapServers(), "durable", 4))
        .containsExactly("one", "two", "three", "four");
    cluster.heal();
  }

  // The dedicated controller's promise (two brokers killed: every partition's in-sync replicas
  // shrink to the survivor and the brokers refuse acks=all writes with NotEnoughReplicas; a broker
  // started again takes writes) is checked by postbox-kafka's KafkaClusterMinIsrIT, on its own
  // cluster of that kind, with the same probe producer and the relay beside it. A cluster takes
  // 1.5 min of CI's two cores: it is not started twice for one promise.

  private static KafkaProducer<String, String> producer(String bootstrap) {
    return producer(bootstrap, new Properties());
  }

  private static KafkaProducer<String, String> producer(String bootstrap, Properties extra) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 10_000);
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
    p.put(ProducerConfig.LINGER_MS_CONFIG, 0);
    p.putAll(extra);
    return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
  }

  private static List<String> readAll(String bootstrap, String topic, int expected) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    List<String> out = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
      TopicPartition tp = new TopicPartition(topic, 0);
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
      while (out.size() < expected && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(r -> out.add(r.value()));
      }
    }
    return out;
  }
}
