package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.testkit.RabbitMqServer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/** Topology as code: idempotent, refuses conflicts clearly, survives a deleted shard queue. */
class RabbitTopologyIT {

  static Connection connect(RabbitMqServer server) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(server.uri());
    return f.newConnection("topology-test");
  }

  @Test
  void declaringTwiceIsFineAndAConflictingQueueFailsTheStart() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "topo-" + UUID.randomUUID();
    String name = "sub-" + UUID.randomUUID().toString().substring(0, 8);
    try (Connection c = connect(server)) {
      Channel ch = c.createChannel();
      List<String> first = RabbitTopology.declareShards(ch, name, topic, 2);
      assertThat(RabbitTopology.declareShards(ch, name, topic, 2)).isEqualTo(first);
      // a classic queue where the next subscription expects a quorum queue
      String other = "other-" + UUID.randomUUID().toString().substring(0, 8);
      ch.queueDeclare(RabbitTopology.queue(other, topic, 0), true, false, false, Map.of());
      RabbitSubscriber s =
          RabbitSubscriber.builder(server.uri(), Subscription.builder(other).topics(topic).build())
              .handler(d -> {})
              .shards(1)
              .build();
      assertThatThrownBy(s::start)
          .isInstanceOf(RabbitTopologyException.class)
          .hasMessageContaining(RabbitTopology.queue(other, topic, 0))
          .hasMessageContaining("other arguments");
    }
  }

  @Test
  void aDeletedShardQueueIsDeclaredAgainAndConsumed() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "topo-" + UUID.randomUUID();
    Subscription sub =
        Subscription.builder("resub-" + UUID.randomUUID().toString().substring(0, 8))
            .topics(topic)
            .build();
    Set<UUID> seen = ConcurrentHashMap.newKeySet();
    try (RabbitSubscriber s =
            RabbitSubscriber.builder(server.uri(), sub)
                .shards(1)
                .handler(d -> seen.add(d.message().id()))
                .build();
        RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build();
        Connection c = connect(server)) {
      s.start();
      c.createChannel().queueDelete(RabbitTopology.queue(sub.name(), topic, 0));
      Message m = Message.builder(topic, "t").key("k").build();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> p.publish(List.of(m)).get(0) instanceof PublishOutcome.Acknowledged);
      await().atMost(Duration.ofSeconds(30)).until(() -> seen.contains(m.id()));
    }
  }

  @Test
  void anOlderConsistentHashExchangeOrAnotherShardCountFailsTheStartByName() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "topo-" + UUID.randomUUID();
    String old = "old-" + UUID.randomUUID().toString().substring(0, 8);
    String resized = "resized-" + UUID.randomUUID().toString().substring(0, 8);
    try (Connection c = connect(server)) {
      Channel ch = c.createChannel();
      ch.exchangeDeclare(
          RabbitTopology.subscriptionExchange(old, topic), "x-consistent-hash", true);
      assertThatThrownBy(() -> RabbitTopology.declareShards(c.createChannel(), old, topic, 2))
          .isInstanceOf(RabbitTopologyException.class)
          .hasMessageContaining("x-consistent-hash exchange of an older Postbox")
          .hasMessageContaining("delete the exchange");
      RabbitTopology.declareShards(c.createChannel(), resized, topic, 2);
      assertThatThrownBy(() -> RabbitTopology.declareShards(c.createChannel(), resized, topic, 3))
          .isInstanceOf(RabbitTopologyException.class)
          .hasMessageContaining("exists for another shard count");
    }
  }

  @Test
  void aRoutingKeyThatIsNotASlotLandsOnShardZero() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "topo-" + UUID.randomUUID();
    String name = "any-" + UUID.randomUUID().toString().substring(0, 8);
    try (Connection c = connect(server)) {
      Channel ch = c.createChannel();
      List<String> queues = RabbitTopology.declareShards(ch, name, topic, 3);
      ch.confirmSelect();
      ch.basicPublish(topic, "not-a-slot", true, null, new byte[] {1});
      ch.basicPublish(topic, RabbitTopology.routingKey("k8"), true, null, new byte[] {2});
      ch.waitForConfirmsOrDie(30_000);
      int k8 = RabbitTopology.shardOf(RabbitTopology.slot("k8"), 3);
      for (int i = 0; i < 3; i++) {
        int expected = (i == 0 ? 1 : 0) + (i == k8 ? 1 : 0);
        assertThat(ch.queueDeclarePassive(queues.get(i)).getMessageCount())
            .as("messages in shard " + i)
            .isEqualTo(expected);
      }
    }
  }
}
