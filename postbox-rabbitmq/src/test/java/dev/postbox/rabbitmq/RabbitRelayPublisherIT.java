package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.testkit.RabbitMqServer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The relay publisher against a real RabbitMQ node: confirms, sharding by key, unroutable. */
class RabbitRelayPublisherIT {

  static Connection connect(RabbitMqServer server) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(server.uri());
    return f.newConnection("test");
  }

  @Test
  void confirmedMessagesLandInOneShardPerKeyInOrder() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "pub-" + UUID.randomUUID();
    int shards = 3;
    try (Connection c = connect(server);
        RabbitRelayPublisher publisher = RabbitRelayPublisher.builder(server.uri()).build()) {
      Channel ch = c.createChannel();
      List<String> queues = RabbitTopology.declareShards(ch, "sub", topic, shards);
      List<Message> batch = new ArrayList<>();
      for (int i = 0; i < 60; i++) {
        batch.add(
            Message.builder(topic, "t")
                .key("k" + (i % 6))
                .header("seq", Integer.toString(i))
                .build());
      }
      List<PublishOutcome> outcomes = publisher.send(batch).outcomes();
      assertThat(outcomes).hasSize(60).allMatch(o -> o instanceof PublishOutcome.Acknowledged);

      Map<String, String> queueOfKey = new HashMap<>();
      Map<String, Integer> lastSeq = new HashMap<>();
      int read = 0;
      for (String q : queues) {
        BlockingQueue<Message> got = new LinkedBlockingQueue<>();
        ch.basicConsume(
            q,
            true,
            (tag, d) ->
                got.add(
                    RabbitMessages.fromDelivery(
                        topic, d.getEnvelope(), d.getProperties(), d.getBody())),
            tag -> {});
        Message m;
        while ((m = got.poll(2, TimeUnit.SECONDS)) != null) {
          read++;
          String key = m.key().orElseThrow();
          assertThat(queueOfKey.putIfAbsent(key, q)).isIn(null, q);
          int seq = Integer.parseInt(m.header("seq").orElseThrow());
          assertThat(seq).isGreaterThan(lastSeq.getOrDefault(key, -1));
          lastSeq.put(key, seq);
        }
      }
      assertThat(read).isEqualTo(60);
    }
  }

  @Test
  void unroutableIsAFailureOfTheTopic() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "nobody-" + UUID.randomUUID();
    try (RabbitRelayPublisher publisher = RabbitRelayPublisher.builder(server.uri()).build()) {
      List<PublishOutcome> outcomes =
          publisher.send(List.of(Message.builder(topic, "t").key("a").build())).outcomes();
      assertThat(outcomes.get(0))
          .isInstanceOfSatisfying(
              PublishOutcome.Failed.class,
              f -> {
                assertThat(f.topicWide()).isTrue();
                assertThat(f.unpublishable()).isTrue();
                assertThat(f.error()).isInstanceOf(RabbitUnroutableException.class);
              });
      // the publisher is still usable for a routable topic
      String ok = "ok-" + UUID.randomUUID();
      try (Connection c = connect(server)) {
        RabbitTopology.declareShards(c.createChannel(), "sub", ok, 1);
      }
      assertThat(publisher.publish(List.of(Message.builder(ok, "t").key("a").build())))
          .allMatch(o -> o instanceof PublishOutcome.Acknowledged);
    }
  }

  @Test
  void aTargetedReplayGoesToItsSubscriptionOnlyOrToTheTopicWhenItHasNoExchange() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "replay-" + UUID.randomUUID();
    try (Connection c = connect(server);
        RabbitRelayPublisher publisher = RabbitRelayPublisher.builder(server.uri()).build()) {
      Channel ch = c.createChannel();
      String a = RabbitTopology.declareShards(ch, "a", topic, 1).get(0);
      String b = RabbitTopology.declareShards(ch, "b", topic, 1).get(0);
      Message toA = replayFor(topic, "a");
      Message toGhost = replayFor(topic, "ghost"); // no exchange "ghost.<topic>": the topic's
      Message plain = Message.builder(topic, "t").key("k").build();

      assertThat(publisher.send(List.of(toA, toGhost, plain)).outcomes())
          .allMatch(o -> o instanceof PublishOutcome.Acknowledged);

      assertThat(drain(ch, a)).containsExactly(toA.id(), toGhost.id(), plain.id());
      assertThat(drain(ch, b)).containsExactly(toGhost.id(), plain.id());
    }
  }

  private static Message replayFor(String topic, String subscription) {
    return Message.builder(topic, "t")
        .key("k")
        .header(dev.postbox.core.ReplayHeaders.DEAD_LETTER, "1")
        .header(dev.postbox.core.ReplayHeaders.REPLAYED_BY, "alice")
        .header(dev.postbox.core.ReplayHeaders.TARGET, subscription)
        .build();
  }

  /**
   * The ids of the messages in {@code queue}, in order: as many as the queue counts (they were
   * confirmed, so they are there), read by a consumer (quorum queues with single active consumer
   * refuse basic.get).
   */
  private static List<UUID> drain(Channel ch, String queue) throws Exception {
    int n = ch.queueDeclarePassive(queue).getMessageCount();
    List<UUID> ids = new java.util.concurrent.CopyOnWriteArrayList<>();
    String tag =
        ch.basicConsume(
            queue,
            true,
            (t, d) -> ids.add(UUID.fromString(d.getProperties().getMessageId())),
            t -> {});
    org.awaitility.Awaitility.await().until(() -> ids.size() >= n);
    ch.basicCancel(tag);
    return ids;
  }
}
