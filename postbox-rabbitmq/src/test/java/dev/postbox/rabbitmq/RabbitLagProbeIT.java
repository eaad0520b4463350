package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.RabbitMqServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link RabbitLagProbe} against a real RabbitMQ node: the ready messages of a subscription's shard
 * queues after publishing with nobody consuming (stalled), and the consumer and the drained queues
 * once a subscriber runs; a subscription that never started has no queues to report.
 */
@PostboxTest
class RabbitLagProbeIT {

  private static final int SHARDS = 2;
  private static final int TOTAL = 30;

  @Test
  void readsReadyMessagesWithoutConsumerThenTheConsumerOnceOneRuns() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "lag-" + UUID.randomUUID();
    String name = "lag-" + UUID.randomUUID().toString().substring(0, 8);
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(server.uri());
    try (Connection c = f.newConnection()) {
      RabbitTopology.declareShards(c.createChannel(), name, topic, SHARDS);
    }
    publish(server, topic);
    try (RabbitLagProbe probe =
        RabbitLagProbe.builder(server.uri())
            .subscription(name, SHARDS, topic)
            .subscription("never-started-" + UUID.randomUUID(), SHARDS, topic)
            .build()) {
      List<RabbitLagProbe.QueueLag> before = probe.read();
      assertThat(before)
          .extracting(RabbitLagProbe.QueueLag::queue)
          .containsExactly(
              RabbitTopology.queue(name, topic, 0), RabbitTopology.queue(name, topic, 1));
      assertThat(before.stream().mapToLong(RabbitLagProbe.QueueLag::messagesReady).sum())
          .isEqualTo(TOTAL);
      assertThat(before).allMatch(q -> q.consumers() == 0);
      assertThat(before.stream().filter(RabbitLagProbe.QueueLag::stalled)).isNotEmpty();

      AtomicInteger handled = new AtomicInteger();
      try (RabbitSubscriber s =
          RabbitSubscriber.builder(server.uri(), Subscription.builder(name).topics(topic).build())
              .shards(SHARDS)
              .handler(d -> handled.incrementAndGet())
              .build()) {
        s.start();
        await().atMost(Duration.ofSeconds(60)).until(() -> s.stats().applied() == TOTAL);
        List<RabbitLagProbe.QueueLag> after = probe.read();
        assertThat(after).allMatch(q -> q.consumers() == 1 && q.messagesReady() == 0);
        assertThat(after).noneMatch(RabbitLagProbe.QueueLag::stalled);
      }
      assertThat(handled).hasValue(TOTAL);
    }
  }

  private static void publish(RabbitMqServer server, String topic) throws InterruptedException {
    List<Message> ms = new ArrayList<>();
    for (int i = 0; i < TOTAL; i++) {
      ms.add(
          Message.builder(topic, "order.created")
              .key("key-" + (i % 5))
              .jsonPayload("{\"n\":" + i + "}")
              .build());
    }
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      assertThat(p.publish(ms)).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
    }
  }
}
