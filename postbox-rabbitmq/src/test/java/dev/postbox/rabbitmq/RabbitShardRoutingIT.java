package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.testkit.RabbitMqServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A key's shard queue survives a broker restart: the relay's messages of one key go to the same
 * shard queue before and after the node is killed with {@code kill -9} and started again. (Issue
 * 38: with a consistent-hash exchange per subscription, the node rebuilt its hash ring from the
 * recovered bindings in whatever order its recovery workers added them, so most keys moved to
 * another shard queue while their older messages still waited in the old one, and two shard
 * consumers then applied one key's messages at the same time.)
 */
class RabbitShardRoutingIT {

  private static final Logger log = LoggerFactory.getLogger(RabbitShardRoutingIT.class);
  private static final int SHARDS = 8;
  private static final int KEYS = 60;

  @Test
  void everyKeyStaysOnItsShardQueueAcrossBrokerKills() throws Exception {
    Assumptions.assumeFalse(
        RabbitMqServer.sharedOrSkip().isExternal(), "needs a private node to kill");
    try (RabbitMqServer server =
        RabbitMqServer.startPrivate(RabbitMqServer.findScript().orElseThrow())) {
      String topic = "routing-" + UUID.randomUUID();
      List<String> queues;
      try (Connection c = RabbitTopologyIT.connect(server)) {
        queues = RabbitTopology.declareShards(c.createChannel(), "sub", topic, SHARDS);
      }
      Map<String, Integer> before = route(server, topic, queues);
      assertThat(before).hasSize(KEYS);
      for (int kill = 1; kill <= 2; kill++) {
        server.kill();
        server.start();
        Map<String, Integer> after = route(server, topic, queues);
        log.info("key -> shard before: {}; after kill {}: {}", before, kill, after);
        assertThat(after)
            .as("each key's shard queue after kill -9 number " + kill)
            .isEqualTo(before);
      }
    }
  }

  /** Publishes one message per key through the relay publisher; which queue each key landed in. */
  private static Map<String, Integer> route(
      RabbitMqServer server, String topic, List<String> queues) throws Exception {
    List<Message> batch = new ArrayList<>();
    for (int k = 0; k < KEYS; k++) {
      batch.add(Message.builder(topic, "t").key("k" + k).build());
    }
    try (RabbitRelayPublisher p =
        RabbitRelayPublisher.builder(server.uri()).confirmTimeout(Duration.ofSeconds(30)).build()) {
      assertThat(p.publish(batch)).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
    }
    Map<String, Integer> keyToQueue = new ConcurrentHashMap<>();
    List<String> doubles = new CopyOnWriteArrayList<>();
    try (Connection c = RabbitTopologyIT.connect(server)) {
      Channel ch = c.createChannel();
      for (String q : queues) {
        ch.basicConsume(
            q,
            true,
            (tag, d) -> {
              String key =
                  d.getProperties().getHeaders().get(RabbitMessages.CE_PARTITIONKEY).toString();
              if (keyToQueue.put(key, queues.indexOf(q)) != null) {
                doubles.add(key);
              }
            },
            tag -> {});
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> keyToQueue.size() == KEYS);
    }
    assertThat(doubles).as("keys delivered twice").isEmpty();
    return new TreeMap<>(keyToQueue);
  }
}
