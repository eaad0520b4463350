package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** A dedicated embedded broker (not the shared one), since this test kills it. */
@Tag("integration")
class KafkaBrokerTest {

  @Test
  void acknowledgedRecordSurvivesKillMinus9AndTheBrokerComesBack() throws Exception {
    Path dataDir;
    try (KafkaBroker broker = KafkaBroker.embedded()) {
      assertThatThrownBy(broker::bootstrapServers).isInstanceOf(IllegalStateException.class);
      broker.start();
      assertThat(broker.isRunning()).isTrue();
      assertThat(broker.isExternal()).isFalse();
      assertThat(broker.lastStartupTime()).isPresent();
      dataDir = broker.dataDirectory().orElseThrow();
      String bootstrap = broker.bootstrapServers();
      assertThat(bootstrap).startsWith("127.0.0.1:");

      broker.createTopic("durable", 2);
      assertThatThrownBy(() -> broker.createTopic("durable", 2))
          .isInstanceOf(TopicExistsException.class);

      try (KafkaProducer<String, String> producer = producer(bootstrap)) {
        producer
            .send(new ProducerRecord<>("durable", 0, "k", "before-crash"))
            .get(30, TimeUnit.SECONDS);
      }

      broker.kill();
      assertThat(broker.isRunning()).isFalse();

      broker.start();
      assertThat(broker.bootstrapServers()).isEqualTo(bootstrap);
      assertThat(broker.lastStartupTime()).isPresent();

      try (KafkaProducer<String, String> producer = producer(bootstrap)) {
        producer
            .send(new ProducerRecord<>("durable", 0, "k", "after-restart"))
            .get(60, TimeUnit.SECONDS);
      }
      assertThat(readAll(bootstrap, new TopicPartition("durable", 0), 2))
          .containsExactly("before-crash", "after-restart");

      broker.pause();
      broker.resume();
      broker.restart();
      assertThat(readAll(bootstrap, new TopicPartition("durable", 0), 2))
          .containsExactly("before-crash", "after-restart");
    }
    assertThat(Files.exists(dataDir)).isFalse();
  }

  static KafkaProducer<String, String> producer(String bootstrap) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
    return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
  }

  /** Reads a partition from the beginning (no consumer group) until {@code count} records. */
  static List<String> readAll(String bootstrap, TopicPartition tp, int count) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    List<String> values = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> {
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
              values.add(r.value());
            }
            return values.size() >= count;
          });
    }
    return values;
  }

  @Test
  void externalBrokerRefusesLifecycleOperations() {
    try (KafkaBroker external = KafkaBroker.external("127.0.0.1:1")) {
      assertThat(external.isExternal()).isTrue();
      assertThat(external.bootstrapServers()).isEqualTo("127.0.0.1:1");
      assertThat(external.dataDirectory()).isEmpty();
      assertThatThrownBy(external::kill)
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("POSTBOX_KAFKA_BOOTSTRAP");
      assertThatThrownBy(external::restart).isInstanceOf(UnsupportedOperationException.class);
      assertThatThrownBy(external::pause).isInstanceOf(UnsupportedOperationException.class);
    }
  }
}
