package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher.PendingPublish;
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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * The relay publisher's pipelining against a real RabbitMQ node: a batch sent behind one still
 * waiting for its confirms goes out on the same channel (each key's messages in order across the
 * two), and never past a failure of the batch ahead (nack, lost channel) nor on another channel.
 */
class RabbitRelayPipeliningIT {

  @Test
  void aBatchSentBehindAnUnconfirmedOneKeepsEachKeysOrder() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "pipe-" + UUID.randomUUID();
    try (Connection c = RabbitRelayPublisherIT.connect(server);
        RabbitRelayPublisher publisher = RabbitRelayPublisher.builder(server.uri()).build()) {
      assertThat(publisher.pipelinesInOrder()).isTrue();
      Channel ch = c.createChannel();
      List<String> queues = RabbitTopology.declareShards(ch, "sub", topic, 3);
      List<Message> first = messages(topic, 0, 300);
      List<Message> second = messages(topic, 300, 300);
      PendingPublish n = publisher.send(first);
      PendingPublish next = publisher.sendAfter(n, second); // before n's confirms are awaited
      assertThat(n.outcomes()).hasSize(300).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
      assertThat(next.outcomes())
          .hasSize(300)
          .allMatch(o -> o instanceof PublishOutcome.Acknowledged);
      Map<String, Integer> last = new HashMap<>();
      int read = 0;
      for (String q : queues) {
        for (Message m : drain(ch, topic, q)) {
          read++;
          int seq = Integer.parseInt(m.header("seq").orElseThrow());
          assertThat(seq).as("key %s", m.key()).isGreaterThan(last.getOrDefault(m.key().get(), -1));
          last.put(m.key().get(), seq);
        }
      }
      assertThat(read).isEqualTo(600);
    }
  }

  @Test
  void nothingIsSentBehindANackedBatch() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "pipe-nack-" + UUID.randomUUID();
    String queue = topic + ".full";
    try (Connection c = RabbitRelayPublisherIT.connect(server);
        RabbitRelayPublisher publisher = RabbitRelayPublisher.builder(server.uri()).build()) {
      Channel ch = c.createChannel();
      RabbitTopology.declareExchange(ch, topic);
      // room for two messages; the broker nacks the third (overflow reject-publish)
      ch.queueDeclare(
          queue, false, false, true, Map.of("x-max-length", 2, "x-overflow", "reject-publish"));
      ch.queueBind(queue, RabbitTopology.exchange(topic), "");
      List<Message> all = messages(topic, 0, 4, 1); // one key: seq 0..3
      PendingPublish n = publisher.send(all.subList(0, 3));
      List<PublishOutcome> outcomes = n.outcomes();
      assertThat(outcomes.subList(0, 2)).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
      assertThat(outcomes.get(2)).isInstanceOf(PublishOutcome.Failed.class);

      ch.queuePurge(queue); // room again: seq 3 would now be enqueued ahead of seq 2's resend
      List<PublishOutcome> behind = publisher.sendAfter(n, all.subList(3, 4)).outcomes();
      assertThat(behind)
          .singleElement()
          .isInstanceOfSatisfying(
              PublishOutcome.Failed.class, f -> assertThat(f.unpublishable()).isFalse());
      assertThat(ch.queueDeclarePassive(queue).getMessageCount()).isZero();

      // the relay's resend: the failed message first, then the one behind it
      assertThat(publisher.send(all.subList(2, 4)).outcomes())
          .allMatch(o -> o instanceof PublishOutcome.Acknowledged);
      assertThat(drain(ch, topic, queue))
          .extracting(m -> m.header("seq").orElseThrow())
          .containsExactly("2", "3");
    }
  }

  /**
   * Issue 38: a nacked message is never overtaken by the next one of its key. The queue is full
   * when seq 0 goes out (the broker nacks it: overflow reject-publish) and has room again before
   * seq 1 would go out (the fault hook waits for seq 0's confirm on the relay's channel, then
   * purges the queue): seq 1 must not be published before seq 0 is acknowledged, else the relay's
   * resend of seq 0 would land behind it.
   */
  @Test
  void aNackedMessageIsNotOvertakenByTheNextOfItsKey() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "pipe-overtake-" + UUID.randomUUID();
    String queue = topic + ".full";
    try (Connection c = RabbitRelayPublisherIT.connect(server)) {
      Channel ch = c.createChannel();
      RabbitTopology.declareExchange(ch, topic);
      ch.queueDeclare(
          queue, false, false, true, Map.of("x-max-length", 2, "x-overflow", "reject-publish"));
      ch.queueBind(queue, RabbitTopology.exchange(topic), "");
      ch.confirmSelect();
      ch.basicPublish("", queue, null, new byte[] {0});
      ch.basicPublish("", queue, null, new byte[] {0});
      ch.waitForConfirmsOrDie(30_000); // full
      AtomicBoolean armed = new AtomicBoolean(true);
      BiConsumer<Channel, Message> roomAfterTheNack =
          (relayChannel, m) -> {
            if (m.header("seq").orElseThrow().equals("1") && armed.getAndSet(false)) {
              try {
                relayChannel.waitForConfirms(30_000); // seq 0's nack has come
                ch.queuePurge(queue);
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            }
          };
      List<Message> all = messages(topic, 0, 2, 1); // one key: seq 0, 1
      try (RabbitRelayPublisher publisher =
          RabbitRelayPublisher.builder(server.uri()).beforePublish(roomAfterTheNack).build()) {
        List<PublishOutcome> outcomes = publisher.send(all).outcomes();
        assertThat(outcomes.get(0))
            .as("seq 0, queue full")
            .isInstanceOf(PublishOutcome.Failed.class);
        assertThat(outcomes.get(1))
            .as("seq 1, behind the nacked seq 0 of its key")
            .isInstanceOfSatisfying(
                PublishOutcome.Failed.class, f -> assertThat(f.unpublishable()).isFalse());
        assertThat(ch.queueDeclarePassive(queue).getMessageCount())
            .as("only the two that filled the queue")
            .isEqualTo(2);

        // the relay's resend, once there is room: the failed message first, then the one behind it
        armed.set(false); // the fault was for the first send only
        ch.queuePurge(queue);
        assertThat(publisher.send(all).outcomes())
            .allMatch(o -> o instanceof PublishOutcome.Acknowledged);
        assertThat(drain(ch, topic, queue))
            .extracting(m -> m.header("seq").orElseThrow())
            .containsExactly("0", "1");
      }
    }
  }

  @Test
  void nothingIsSentBehindABatchWhoseChannelWasLostNorOnANewChannel() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    assumeFalse(server.isExternal(), "closing a connection from the broker needs a private node");
    String topic = "pipe-lost-" + UUID.randomUUID();
    String name = "pipelining-it-" + UUID.randomUUID();
    try (Connection c = RabbitRelayPublisherIT.connect(server);
        RabbitRelayPublisher publisher =
            RabbitRelayPublisher.builder(server.uri()).connectionName(name).build()) {
      Channel ch = c.createChannel();
      String queue = RabbitTopology.declareShards(ch, "sub", topic, 1).get(0);
      List<Message> all = messages(topic, 0, 4, 1);
      PendingPublish n = publisher.send(all.subList(0, 2));
      assertThat(n.outcomes()).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
      assertThat(server.closeConnections(name)).isEqualTo(1);

      List<PublishOutcome> behind = publisher.sendAfter(n, all.subList(2, 4)).outcomes();
      assertThat(behind)
          .hasSize(2)
          .allSatisfy(o ->
              assertThat(o)
                  .isInstanceOfSatisfying(
                      PublishOutcome.Failed.class, f -> assertThat(f.unpublishable()).isFalse()));
      assertThat(ch.queueDeclarePassive(queue).getMessageCount()).isEqualTo(2);

      // the relay's resend opens a new connection
      assertThat(publisher.send(all.subList(2, 4)).outcomes())
          .allMatch(o -> o instanceof PublishOutcome.Acknowledged);
      assertThat(drain(ch, topic, queue))
          .extracting(m -> m.header("seq").orElseThrow())
          .containsExactly("0", "1", "2", "3");
    }
  }

  private static List<Message> messages(String topic, int from, int count) {
    return messages(topic, from, count, 7);
  }

  /** Messages {@code from..from+count-1}, key {@code "k" + seq % keys}, header {@code seq}. */
  private static List<Message> messages(String topic, int from, int count, int keys) {
    List<Message> out = new ArrayList<>(count);
    for (int i = from; i < from + count; i++) {
      out.add(
          Message.builder(topic, "t")
              .key("k" + (i % keys))
              .header("seq", Integer.toString(i))
              .build());
    }
    return out;
  }

  /**
   * Every message now in {@code queue}, in queue order (all were confirmed, so all are counted);
   * consumed, since a single-active-consumer quorum queue refuses {@code basic.get}.
   */
  private static List<Message> drain(Channel ch, String topic, String queue) throws Exception {
    int count = ch.queueDeclarePassive(queue).getMessageCount();
    BlockingQueue<Message> got = new LinkedBlockingQueue<>();
    String tag =
        ch.basicConsume(
            queue,
            true,
            (t, d) ->
                got.add(
                    RabbitMessages.fromDelivery(
                        topic, d.getEnvelope(), d.getProperties(), d.getBody())),
            t -> {});
    List<Message> out = new ArrayList<>(count);
    while (out.size() < count) {
      Message m = got.poll(30, TimeUnit.SECONDS);
      assertThat(m).as("message %d of %d in %s", out.size() + 1, count, queue).isNotNull();
      out.add(m);
    }
    ch.basicCancel(tag);
    return out;
  }
}
