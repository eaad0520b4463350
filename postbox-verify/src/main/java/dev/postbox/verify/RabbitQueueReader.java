package dev.postbox.verify;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.verify.TopicReader.Published;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The RabbitMQ campaign's view of what was published: its own subscription ({@value #NAME}) of
 * shard queues on the topic's exchange (sharded by key slot), declared before anything is published
 * and consumed with automatic acks (and the client's automatic recovery after a broker restart), so
 * it receives one copy of every message the broker accepted, per key in the order of its shard
 * queue. A record's "offset" is its arrival index in its shard. The message id comes from the
 * CloudEvents header, key and sequence number from the payload, as {@link TopicReader} reads them.
 *
 * <p>Thread-safe.
 */
final class RabbitQueueReader implements PublishedRecords, AutoCloseable {

  static final String NAME = "verify-reader";

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Connection connection;
  private final Map<Integer, List<Published>> byShard = new HashMap<>();

  RabbitQueueReader(String uri, String topic, int shards) throws Exception {
    this(uri, List.of(), topic, shards);
  }

  /** On a cluster: connects to the first of {@code addresses} that answers ({@code host:port}). */
  RabbitQueueReader(String uri, List<String> addresses, String topic, int shards) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(uri);
    f.setNetworkRecoveryInterval(1000);
    connection =
        addresses.isEmpty()
            ? f.newConnection("verify-reader")
            : f.newConnection(
                addresses.stream().map(com.rabbitmq.client.Address::parseAddress).toList(),
                "verify-reader");
    Channel setup = connection.createChannel();
    List<String> queues = RabbitTopology.declareShards(setup, NAME, topic, shards);
    for (int i = 0; i < queues.size(); i++) {
      int shard = i;
      byShard.put(i, new ArrayList<>());
      Channel ch = connection.createChannel();
      ch.basicQos(1000);
      ch.basicConsume(
          queues.get(i),
          true,
          new DefaultConsumer(ch) {
            @Override
            public void handleDelivery(
                String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body) {
              add(shard, properties, body);
            }
          });
    }
  }

  private void add(int shard, AMQP.BasicProperties properties, byte[] body) {
    UUID id = null;
    String key = null;
    long seq = -1;
    try {
      id = UUID.fromString(properties.getMessageId());
      JsonNode b = JSON.readTree(body);
      key = b.get("key").asText();
      seq = b.get("seq").asLong();
    } catch (Exception e) {
      // counted as a phantom by the checker (no id)
    }
    synchronized (this) {
      List<Published> l = byShard.get(shard);
      l.add(new Published(shard, l.size(), id, key, seq, System.currentTimeMillis()));
    }
  }

  @Override
  public synchronized Map<Integer, List<Published>> all() {
    Map<Integer, List<Published>> out = new HashMap<>();
    byShard.forEach((p, l) -> out.put(p, List.copyOf(l)));
    return out;
  }

  /** Records read so far. */
  synchronized long count() {
    return byShard.values().stream().mapToLong(List::size).sum();
  }

  @Override
  public void close() {
    try {
      connection.abort(2000);
    } catch (RuntimeException e) {
      // closing anyway
    }
  }
}
