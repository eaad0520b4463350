package dev.postbox.console;

import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;

/**
 * The dashboard shows a consumer group's Kafka lag as records behind and age, read by the lag probe
 * from the test kit's broker, when the console is given brokers and groups. A page waits for the
 * lag at most {@code postbox.console.kafka.timeout}; on a busy machine the first reading (a cold
 * admin client) can take longer, and then a later page shows its answer: the test asks until the
 * dashboard shows the lag, as an operator reloading would, and never assumes how fast Kafka
 * answers.
 */
@SpringBootTest(classes = ConsoleApplication.class)
@AutoConfigureMockMvc
class ConsoleLagIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-lag");
  static final String TOPIC = DB.context().topic("console.lag.orders", 1);
  static final String GROUP = "inventory-" + TOPIC;

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) throws Exception {
    DB.register(registry);
    registry.add("postbox.console.kafka.bootstrap-servers", DB.context()::bootstrapServers);
    registry.add("postbox.console.kafka.groups", () -> GROUP);
    registry.add("postbox.console.retry-unreachable-after", () -> "PT1S");
    lagOfThree();
  }

  /** Five records on the topic, the group committed after the second: three behind. */
  private static void lagOfThree() throws Exception {
    String bootstrap = DB.context().bootstrapServers();
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(
            Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap),
            new ByteArraySerializer(),
            new ByteArraySerializer())) {
      for (int i = 0; i < 5; i++) {
        producer.send(new ProducerRecord<>(TOPIC, 0, null, ("order " + i).getBytes())).get();
      }
    }
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(p)) {
      admin
          .alterConsumerGroupOffsets(
              GROUP, Map.of(new TopicPartition(TOPIC, 0), new OffsetAndMetadata(2)))
          .all()
          .get();
    }
  }

  @Autowired MockMvc mvc;

  @Test
  void theDashboardShowsTheGroupsLagFromKafka() throws Exception {
    Awaitility.await()
        .atMost(Duration.ofMinutes(2))
        .pollInterval(Duration.ofMillis(500))
        .untilAsserted(() ->
            mvc.perform(get("/").with(user("victor").roles("VIEWER")))
                .andExpect(status().isOk())
                .andExpect(content().string(org.hamcrest.Matchers.containsString(TOPIC + "-0")))
                .andExpect(content().string(org.hamcrest.Matchers.containsString("3 behind"))));
  }
}
