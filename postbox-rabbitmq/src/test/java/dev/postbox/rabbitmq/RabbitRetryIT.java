package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.FailureDecision;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.rabbitmq.internal.DeadLetterCopy;
import dev.postbox.rabbitmq.internal.WaitQueues;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Delayed retries the broker's way on a real RabbitMQ node: TTL wait queues that dead-letter back
 * to the shard queue, our own tier header as the attempt budget, {@code x-death} shown to the
 * handler, and the give-up into the PostgreSQL dead letters (byte-identical) and the broker's
 * dead-letter exchange.
 */
@PostboxTest
class RabbitRetryIT {

  private final List<AutoCloseable> open = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  /** Unordered, no in-place retries: a transient failure goes straight to the wait queues. */
  private static Subscription subscription(String name, String topic) {
    return Subscription.builder(name + "-" + UUID.randomUUID().toString().substring(0, 8))
        .topics(topic)
        .ordering(Ordering.UNORDERED)
        .failureHandler((d, e) -> new FailureDecision.GiveUp("no in-place retries", false))
        .build();
  }

  @Test
  void aMessageThatFailsTwiceIsAppliedOnceThroughTheWaitQueuesWithXDeathShown() throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String topic = "retry-" + UUID.randomUUID();
    Subscription sub = subscription("flaky", topic);
    Queue<String> attempts = new ConcurrentLinkedQueue<>();
    Set<UUID> applied = ConcurrentHashMap.newKeySet();
    AtomicInteger failures = new AtomicInteger();
    RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), sub)
            .shards(1)
            .retryTiers(Duration.ofMillis(300), Duration.ofMillis(300))
            .handler(d -> {
              if (d.message().key().orElseThrow().equals("flaky")) {
                attempts.add(d.attempt() + ":" + d.message().header("x-death").orElse("-"));
                if (failures.incrementAndGet() <= 2) {
                  throw new IllegalStateException("dependency timed out");
                }
              }
              applied.add(d.message().id());
            })
            .build();
    s.start();
    open.add(s);
    Message flaky = Message.builder(topic, "t").key("flaky").jsonPayload("{}").build();
    List<Message> all = new ArrayList<>(List.of(flaky));
    for (int i = 0; i < 20; i++) {
      all.add(Message.builder(topic, "t").key("k" + i).jsonPayload("{}").build());
    }
    publish(server, all);
    await().atMost(Duration.ofSeconds(60)).until(() -> applied.size() == 21);
    assertThat(attempts).hasSize(3);
    List<String> seen = List.copyOf(attempts);
    assertThat(seen.get(0)).isEqualTo("1:-");
    assertThat(seen.get(1)).startsWith("2:").contains("reason=expired").contains(".wait.1");
    assertThat(seen.get(2)).startsWith("3:").contains(".wait.2");
    assertThat(s.stats().retries()).isEqualTo(1); // tier 1 -> tier 2
    assertThat(s.stats().givenUp()).isZero();
    await().atMost(Duration.ofSeconds(10)).until(() -> s.inFlight() == 0);
  }

  @Test
  void anExhaustedMessageIsDeadLetteredByteIdenticalAndSentToTheBrokerDeadLetterExchange(
      PostboxTestContext ctx) throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    DeadLetterStore store = PostgresDeadLetterStore.create(ds);
    String topic = "doom-" + UUID.randomUUID();
    String dlx = "dlx-" + UUID.randomUUID();
    String dlq = dlx + ".q";
    try (Connection c = connect(server);
        Channel ch = c.createChannel()) {
      ch.exchangeDeclare(dlx, "fanout", true);
      ch.queueDeclare(dlq, true, false, false, Map.of());
      ch.queueBind(dlq, dlx, "");
      Subscription sub = subscription("doom", topic);
      AtomicInteger calls = new AtomicInteger();
      RabbitSubscriber s =
          RabbitSubscriber.builder(server.uri(), sub)
              .shards(1)
              .retryTiers(Duration.ofMillis(200))
              .deadLetters(store)
              .deadLetterExchange(dlx)
              .handler(d -> {
                calls.incrementAndGet();
                if (d.message().key().orElseThrow().equals("poison")) {
                  throw new PermanentMessageException("cannot ever apply " + d.message().id());
                }
                throw new IllegalStateException("still down");
              })
              .build();
      s.start();
      open.add(s);
      Message doomed =
          Message.builder(topic, "t").key("doomed").header("h", "v").jsonPayload("{}").build();
      Message poison = Message.builder(topic, "t").key("poison").jsonPayload("{}").build();
      publish(server, List.of(doomed, poison));
      await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> store.query(DeadLetterStore.Query.all(10)).size() == 2);
      List<DeadLetterStore.DeadLetter> letters = store.query(DeadLetterStore.Query.all(10));
      DeadLetterStore.NewDeadLetter d =
          letters.stream()
              .map(DeadLetterStore.DeadLetter::letter)
              .filter(l -> l.messageId().orElseThrow().equals(doomed.id()))
              .findFirst()
              .orElseThrow();
      assertThat(d.value()).isEqualTo(doomed.payload().bytes());
      assertThat(d.classification()).isEqualTo(Classification.RETRIES_EXHAUSTED);
      assertThat(d.attempts()).isEqualTo(2); // first delivery + one tier
      assertThat(asMap(d.headers()))
          .as("headers byte-identical to the published ones")
          .isEqualTo(asMap(RabbitMessages.deadLetterHeaders(RabbitMessages.toProperties(doomed))));
      DeadLetterStore.NewDeadLetter p =
          letters.stream()
              .map(DeadLetterStore.DeadLetter::letter)
              .filter(l -> l.messageId().orElseThrow().equals(poison.id()))
              .findFirst()
              .orElseThrow();
      assertThat(p.classification()).isEqualTo(Classification.PERMANENT);
      assertThat(p.attempts()).isEqualTo(1); // permanent: no wait queue
      List<GetResponse> copies = new ArrayList<>();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> {
            GetResponse r = ch.basicGet(dlq, true);
            if (r != null) {
              copies.add(r);
            }
            return copies.size() == 2;
          });
      for (GetResponse r : copies) {
        Map<String, Object> h = r.getProps().getHeaders();
        assertThat(h).containsKey(RabbitMessages.CE_ID).doesNotContainKey(WaitQueues.TIER);
        assertThat(r.getBody()).isEqualTo(doomed.payload().bytes());
        assertThat(h.get(DeadLetterCopy.SUBSCRIPTION)).hasToString(sub.name());
        assertThat(h.get(DeadLetterCopy.ORIGIN))
            .hasToString(RabbitTopology.queue(sub.name(), topic, 0));
        assertThat(h.get(DeadLetterCopy.FIRST_FAILURE)).isNotNull();
        if (h.get(RabbitMessages.CE_ID).toString().equals(doomed.id().toString())) {
          assertThat(h.get(DeadLetterCopy.ERROR))
              .hasToString("java.lang.IllegalStateException: still down");
          assertThat(h.get(DeadLetterCopy.ERROR_CLASS))
              .hasToString("java.lang.IllegalStateException");
          assertThat(h.get(DeadLetterCopy.ATTEMPTS)).isEqualTo(2);
          assertThat(h).as("the broker's record of the wait-queue hop").containsKey("x-death");
        } else {
          assertThat(h.get(DeadLetterCopy.ERROR_CLASS))
              .hasToString(PermanentMessageException.class.getName());
          assertThat(h.get(DeadLetterCopy.ERROR).toString())
              .startsWith(PermanentMessageException.class.getName() + ": cannot ever apply");
          assertThat(h.get(DeadLetterCopy.ATTEMPTS)).isEqualTo(1);
          assertThat(h).doesNotContainKey("x-death");
        }
      }
      assertThat(calls.get()).isEqualTo(3);
      await().atMost(Duration.ofSeconds(10)).until(() -> s.inFlight() == 0);
    }
  }

  @Test
  void waitQueueRetriesAreRefusedForOrderedSubscriptionsAndAMissingExchangeFailsTheStart() {
    assertThatThrownBy(() ->
            RabbitSubscriber.builder(
                    "amqp://localhost",
                    Subscription.builder("o").topics("t").ordering(Ordering.KEY).build())
                .handler(d -> {})
                .retryTiers(Duration.ofSeconds(1))
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("UNORDERED");
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), subscription("nodlx", "t-" + UUID.randomUUID()))
            .handler(d -> {})
            .deadLetterExchange("missing-" + UUID.randomUUID())
            .build();
    assertThatThrownBy(s::start)
        .isInstanceOf(RabbitTopologyException.class)
        .hasMessageContaining("does not exist");
  }

  /** Header name to its bytes (Base64): AMQP tables carry no order. */
  private static Map<String, String> asMap(List<DeadLetterStore.Header> headers) {
    Map<String, String> out = new java.util.TreeMap<>();
    for (DeadLetterStore.Header h : headers) {
      out.put(h.name(), java.util.Base64.getEncoder().encodeToString(h.value()));
    }
    return out;
  }

  private static Connection connect(RabbitMqServer server) throws Exception {
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(server.uri());
    return f.newConnection("retry-test");
  }

  private static void publish(RabbitMqServer server, List<Message> messages) throws Exception {
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() ->
              p.publish(messages).stream().allMatch(o -> o instanceof PublishOutcome.Acknowledged));
    }
  }
}
