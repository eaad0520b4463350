package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/** A test that leaves a shared server paused or stopped does not break the next test. */
@PostboxTest
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class InfrastructureHealingTest {

  @Test
  @Order(1)
  void leavesTheSharedServersBroken(PostboxTestContext context) {
    context.kafka().pause();
    context.postgres().stop();
    assertThat(context.kafka().isPaused()).isTrue();
    assertThat(context.postgres().isRunning()).isFalse();
  }

  @Test
  @Order(2)
  void getsThemBackWorking(PostboxTestContext context) throws Exception {
    assertThat(context.kafka().isPaused()).isFalse();
    assertThat(context.postgres().isRunning()).isTrue();
    String topic = context.topic("healed");
    try (KafkaProducer<String, String> producer =
        KafkaBrokerTest.producer(context.bootstrapServers())) {
      producer.send(new ProducerRecord<>(topic, "k", "v")).get(30, TimeUnit.SECONDS);
    }
    try (Connection c = context.dataSource().getConnection()) {
      assertThat(c.isValid(5)).isTrue();
    }
  }
}
