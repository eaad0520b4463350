package dev.postbox.spec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.FailureDecision;
import dev.postbox.core.consumer.FailureHandler;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.ReplayResult;
import dev.postbox.jdbc.Replayer;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.LongStream;
import javax.sql.DataSource;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The behaviour spec of a transport, written once against {@link Transport} and run for each
 * transport by a subclass ({@link KafkaSpecIT}, {@link RabbitMqSpecIT}), for each delivery
 * guarantee where the behaviour applies. Everything goes through the real path: the PostgreSQL
 * outbox, the transport's relay, its broker, its subscriber on the shared consumer engine, the
 * PostgreSQL inbox (or, for {@code DEDUPLICATED}, the test kit's Redis) and dead-letter store. Each
 * test has its own schema, topic and subscription; the servers are the test kit's, shared by the
 * JVM.
 *
 * <p>Nothing here waits for time to pass: every "nothing more arrives" is proved by a later message
 * of the same key (per-key order), and every wait is an Awaitility bound that only fails a test.
 */
@PostboxTest
abstract class TransportSpec {

  /** Retries in place fast, so a test that retries does not wait. */
  static final Backoff FAST = new Backoff(Duration.ofMillis(10), Duration.ofMillis(50), 2, 0);

  private static final Duration WAIT = Duration.ofSeconds(90);

  private Transport transport;
  private Effects effects;
  private DataSource ds;

  /** The transport under test, on {@code ctx}'s schema. */
  protected abstract Transport open(PostboxTestContext ctx);

  @BeforeEach
  void openTransport(PostboxTestContext ctx) throws Exception {
    ds = ctx.dataSource();
    effects = new Effects(ds);
    transport = open(ctx);
  }

  @AfterEach
  void closeTransport() {
    transport.close();
  }

  // ---------------------------------------------------------------- the relay

  @Test
  void theRelayDeliversEveryCommittedRowOnceAndNoRolledBackRow() throws Exception {
    String topic = transport.topic("relay");
    Subscription sub = subscription("relay", topic, DeliveryGuarantee.AT_LEAST_ONCE).build();
    transport.subscribe(sub, d -> apply(sub, d));
    List<Message> committed = new ArrayList<>();
    List<Message> rolledBack = new ArrayList<>();
    int keys = 10;
    for (int round = 0; round < 15; round++) {
      List<Message> batch = round(topic, keys, round);
      if (round % 3 == 2) {
        rollBack(batch);
        rolledBack.addAll(batch);
      } else {
        commit(batch);
        committed.addAll(batch);
      }
    }
    transport.relay();
    // one last message per key: once it is applied, everything before it on its key was too
    // (per-key order), so a duplicate the relay sent would already show
    List<Message> last = round(topic, keys, 1_000);
    commit(last);
    committed.addAll(last);
    waiting().until(() -> effects.count(sub.name()) >= committed.size() && lastApplied(sub, last));
    assertThat(effects.ids(sub.name()))
        .as("each committed row applied once: none missing, none twice")
        .containsExactlyInAnyOrderElementsOf(ids(committed))
        .doesNotContainAnyElementsOf(ids(rolledBack));
    assertKeyOrder(sub);
    waiting().until(() -> effects.unpublished() == 0);
  }

  // ---------------------------------------------------------------- ordering and concurrency

  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = DeliveryGuarantee.class,
      names = {"AT_MOST_ONCE", "AT_LEAST_ONCE", "EFFECTIVELY_ONCE", "DEDUPLICATED"})
  void eachKeyIsAppliedInOrderWhileDifferentKeysRunConcurrently(DeliveryGuarantee guarantee)
      throws Exception {
    String topic = transport.topic("order");
    Subscription sub = subscription("order", topic, guarantee).concurrency(16).build();
    // the first message of each of these keys waits in the handler until all of them are in it
    // at the same time: proof that keys of one partition or queue run concurrently
    Set<String> gate = Set.of("k0", "k1", "k2", "k3");
    CountDownLatch together = new CountDownLatch(gate.size());
    AtomicBoolean allTogether = new AtomicBoolean(true);
    transport.subscribe(
        sub,
        d -> {
          String key = d.message().key().orElseThrow();
          if (gate.contains(key) && d.message().header("seq").orElseThrow().equals("0")) {
            together.countDown();
            if (!together.await(60, TimeUnit.SECONDS)) {
              allTogether.set(false);
            }
          }
          apply(sub, d);
        });
    transport.relay();
    int keys = 20;
    int perKey = 10;
    for (int seq = 0; seq < perKey; seq++) {
      commit(round(topic, keys, seq));
    }
    waiting().until(() -> effects.distinct(sub.name()) == keys * perKey);
    assertThat(allTogether).as("%d keys in the handler at once", gate.size()).isTrue();
    assertThat(effects.count(sub.name())).isEqualTo(keys * perKey);
    Map<String, List<Long>> byKey = effects.sequencesByKey(sub.name());
    assertThat(byKey).hasSize(keys);
    List<Long> expected = LongStream.range(0, perKey).boxed().toList();
    byKey.forEach((key, seqs) -> assertThat(seqs).as("order of " + key).isEqualTo(expected));
  }

  // ---------------------------------------------------------------- duplicates

  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = DeliveryGuarantee.class,
      names = {"AT_MOST_ONCE", "AT_LEAST_ONCE", "EFFECTIVELY_ONCE", "DEDUPLICATED"})
  void theSameIdDeliveredTwiceGivesTheOutcomeOfTheGuarantee(DeliveryGuarantee guarantee)
      throws Exception {
    String topic = transport.topic("twice");
    Subscription sub = subscription("twice", topic, guarantee).build();
    Transport.Subscriber s = transport.subscribe(sub, d -> apply(sub, d));
    List<Message> once = new ArrayList<>();
    for (int seq = 0; seq < 6; seq++) {
      once.addAll(round(topic, 5, seq));
    }
    List<Message> twice = new ArrayList<>(once);
    twice.addAll(once); // the same ids again, as a relay republishes after a crash
    transport.publishDirectly(twice);
    // the PostgreSQL inbox (EFFECTIVELY_ONCE) or the Redis idempotency store (DEDUPLICATED)
    boolean deduped =
        guarantee == DeliveryGuarantee.EFFECTIVELY_ONCE
            || guarantee == DeliveryGuarantee.DEDUPLICATED;
    // (received and nothing in flight is not enough: an AT_MOST_ONCE poll whose commit failed in a
    // rebalance is received, skipped and read again)
    waiting()
        .until(() ->
            (deduped
                    ? effects.distinct(sub.name()) == once.size()
                        && s.stats().duplicatesSuppressed() == once.size()
                    : effects.count(sub.name()) >= twice.size())
                && s.inFlight() == 0);
    assertThat(effects.distinct(sub.name())).isEqualTo(once.size());
    if (deduped) {
      assertThat(effects.count(sub.name())).as("one effect per id").isEqualTo(once.size());
      assertThat(s.stats().duplicatesSuppressed()).isEqualTo(once.size());
    } else {
      assertThat(effects.count(sub.name()))
          .as("no dedupe record: every delivery applied")
          .isEqualTo(twice.size());
      assertThat(s.stats().duplicatesSuppressed()).isZero();
    }
  }

  // ---------------------------------------------------------------- handler failures

  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = DeliveryGuarantee.class,
      names = {"AT_LEAST_ONCE", "EFFECTIVELY_ONCE", "DEDUPLICATED"})
  void aFailedHandlerRunsAgainUntilItSucceeds(DeliveryGuarantee guarantee) throws Exception {
    String topic = transport.topic("rerun");
    Subscription sub =
        subscription("rerun", topic, guarantee)
            .failureHandler(FailureHandler.retrying(5, FAST))
            .build();
    Message flaky = message(topic, "flaky", 0);
    Transport.Subscriber s =
        transport.subscribe(
            sub,
            d -> {
              apply(sub, d); // the effect first, then the failure
              if (d.message().id().equals(flaky.id()) && d.attempt() < 3) {
                throw new IllegalStateException(
                    "dependency timed out (attempt " + d.attempt() + ")");
              }
            });
    transport.relay();
    List<Message> all = new ArrayList<>(List.of(flaky));
    all.addAll(round(topic, 10, 0));
    commit(all);
    waiting()
        .until(() ->
            effects.distinct(sub.name()) == all.size()
                && effects.calls(flaky.id()).size() == 3
                && s.inFlight() == 0);
    assertThat(effects.calls(flaky.id()))
        .as("a failed attempt releases its lease (DEDUPLICATED): the retry claims it at once")
        .containsExactly(1, 2, 3);
    assertThat(s.stats().retries()).isEqualTo(2);
    assertThat(s.stats().deadLettered()).isZero();
    if (guarantee == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      assertThat(effects.of(sub.name(), flaky.id()))
          .as("the failed attempts' effects rolled back with their inbox transaction")
          .isEqualTo(1);
    } else {
      assertThat(effects.of(sub.name(), flaky.id()))
          .as("no transaction to roll back (AT_LEAST_ONCE, DEDUPLICATED): each run's effect stays")
          .isEqualTo(3);
    }
    if (guarantee == DeliveryGuarantee.DEDUPLICATED) {
      assertThat(s.stats().leasesExpired()).as("each lease released, none expired").isZero();
    }
  }

  @Test
  void atMostOnceDoesNotRunAFailedHandlerAgain() throws Exception {
    String topic = transport.topic("amo");
    Subscription sub =
        subscription("amo", topic, DeliveryGuarantee.AT_MOST_ONCE)
            // a policy that would retry under the other guarantees
            .failureHandler(FailureHandler.retrying(5, FAST))
            .build();
    Message failing = message(topic, "x", 0);
    Message after = message(topic, "x", 1); // same key: applied only once the failing one is done
    Transport.Subscriber s =
        transport.subscribe(
            sub,
            d -> {
              effects.called(d);
              if (d.message().id().equals(failing.id())) {
                throw new IllegalStateException("dependency timed out");
              }
              effects.apply(sub.name(), d);
            });
    transport.relay();
    List<Message> all = new ArrayList<>(List.of(failing, after));
    all.addAll(round(topic, 10, 0));
    commit(all);
    waiting()
        .until(() ->
            effects.distinct(sub.name()) == all.size() - 1
                && effects.of(sub.name(), after.id()) == 1
                && s.inFlight() == 0);
    assertThat(effects.calls(failing.id())).as("run once, never again").containsExactly(1);
    assertThat(effects.of(sub.name(), failing.id())).isZero();
    assertThat(s.stats().retries()).isZero();
    // given up at once, and kept where an operator sees it (not lost silently)
    assertThat(s.stats().deadLettered()).isEqualTo(1);
    DeadLetter letter = onlyDeadLetter();
    assertThat(letter.letter().messageId()).contains(failing.id());
    assertThat(letter.letter().attempts()).isEqualTo(1);
  }

  // ---------------------------------------------------------------- dead letters and poison

  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = DeliveryGuarantee.class,
      names = {"AT_MOST_ONCE", "AT_LEAST_ONCE", "EFFECTIVELY_ONCE", "DEDUPLICATED"})
  void aPermanentFailureIsDeadLetteredByteIdenticalAndReplaysThroughTheOutbox(
      DeliveryGuarantee guarantee) throws Exception {
    String topic = transport.topic("dead");
    Subscription sub =
        subscription("dead", topic, guarantee)
            .failureHandler(FailureHandler.retrying(5, FAST))
            .build();
    AtomicBoolean fixed = new AtomicBoolean();
    Message poison =
        message(topic, "poison", 0).toBuilder()
            .tenant("acme")
            .correlationId("order-42")
            .header("note", "stock check")
            .build();
    Transport.Subscriber s =
        transport.subscribe(
            sub,
            d -> {
              effects.called(d);
              if (d.message().id().equals(poison.id()) && !fixed.get()) {
                throw new PermanentMessageException("product p-404 does not exist");
              }
              effects.apply(sub.name(), d);
            });
    Transport.Tap tap = transport.tap(topic);
    transport.relay();
    List<Message> all = new ArrayList<>(List.of(poison));
    all.addAll(round(topic, 5, 0));
    commit(all);
    waiting()
        .until(() ->
            s.stats().deadLettered() == 1
                && effects.distinct(sub.name()) == all.size() - 1
                && s.inFlight() == 0);
    assertThat(effects.calls(poison.id())).as("permanent: never retried").containsExactly(1);

    DeadLetter letter = onlyDeadLetter();
    DeadLetterStore.NewDeadLetter l = letter.letter();
    Transport.RawRecord wire = tap.await(poison.id(), WAIT);
    assertThat(l.value()).as("value as on the wire").isEqualTo(wire.value());
    assertThat(l.value()).isEqualTo(poison.payload().bytes());
    assertThat(l.key()).as("key as on the wire").isEqualTo(wire.key());
    assertThat(new String(l.key(), StandardCharsets.UTF_8)).isEqualTo("poison");
    assertThat(l.headers()).as("headers as on the wire, in order").isEqualTo(wire.headers());
    assertThat(l.consumer()).isEqualTo(sub.name());
    assertThat(l.topic()).isEqualTo(topic);
    assertThat(l.messageId()).contains(poison.id());
    assertThat(l.classification()).isEqualTo(Classification.PERMANENT);
    assertThat(l.attempts()).isEqualTo(1);
    assertThat(l.errorMessage()).contains("p-404");

    Message decoded = transport.deadLetterDecoder().apply(letter);
    assertThat(decoded.id()).isEqualTo(poison.id());
    assertThat(decoded.type()).isEqualTo(poison.type());
    assertThat(decoded.key()).isEqualTo(poison.key());
    assertThat(decoded.tenant()).isEqualTo(poison.tenant());
    assertThat(decoded.correlationId()).isEqualTo(poison.correlationId());
    assertThat(decoded.headers()).isEqualTo(poison.headers());
    assertThat(decoded.payload().bytes()).isEqualTo(poison.payload().bytes());

    fixed.set(true); // the cause is fixed: replay through the outbox, the relay publishes it again
    Replayer replayer =
        Replayer.builder(ds, transport.deadLetters(), transport.deadLetterDecoder())
            .by("spec")
            .build();
    ReplayResult result = replayer.replay(letter.id());
    assertThat(result.replayed()).containsExactly(letter.id());
    waiting().until(() -> effects.of(sub.name(), poison.id()) == 1 && s.inFlight() == 0);
    assertThat(effects.calls(poison.id())).containsExactly(1, 1);
    assertThat(transport.deadLetters().find(letter.id()).orElseThrow().status())
        .isEqualTo(DeadLetterStore.Status.REPLAYED);
    assertThat(effects.count(sub.name())).isEqualTo(all.size());
  }

  @ParameterizedTest(name = "{0}")
  @EnumSource(
      value = DeliveryGuarantee.class,
      names = {"AT_LEAST_ONCE", "EFFECTIVELY_ONCE", "DEDUPLICATED"})
  void aMessageThatKeepsFailingHoldsOnlyItsOwnKey(DeliveryGuarantee guarantee) throws Exception {
    String topic = transport.topic("poison");
    Subscription sub =
        subscription("poison", topic, guarantee)
            // retried, in place, only after 10 minutes: the key waits, nothing else may
            .failureHandler((d, e) -> new FailureDecision.Retry(Duration.ofMinutes(10)))
            .build();
    List<Message> sick = List.of(message(topic, "sick", 0), message(topic, "sick", 1));
    Transport.Subscriber s =
        transport.subscribe(
            sub,
            d -> {
              effects.called(d);
              if (d.message().key().orElseThrow().equals("sick")) {
                throw new IllegalStateException("sick dependency");
              }
              effects.apply(sub.name(), d);
            });
    transport.relay();
    commit(sick);
    int keys = 20;
    int perKey = 5;
    for (int seq = 0; seq < perKey; seq++) {
      commit(round(topic, keys, seq));
    }
    waiting().until(() -> effects.distinct(sub.name()) == keys * perKey);
    assertThat(effects.calls(sick.get(0).id())).as("waiting for its retry").containsExactly(1);
    assertThat(effects.calls(sick.get(1).id())).as("held behind it, in key order").isEmpty();
    assertThat(s.inFlight()).isGreaterThanOrEqualTo(1);
    assertThat(s.stats().deadLettered()).isZero();
    assertKeyOrder(sub);
  }

  // ---------------------------------------------------------------- helpers

  private Subscription.Builder subscription(
      String name, String topic, DeliveryGuarantee guarantee) {
    return Subscription.builder(
            transport.name() + "-" + name + "-" + UUID.randomUUID().toString().substring(0, 8))
        .topics(topic)
        .guarantee(guarantee)
        .ordering(Ordering.KEY)
        .shutdownTimeout(Duration.ofSeconds(5));
  }

  private void apply(Subscription sub, dev.postbox.core.consumer.Delivery d) throws Exception {
    effects.called(d);
    effects.apply(sub.name(), d);
  }

  private static Message message(String topic, String key, long seq) {
    return Message.builder(topic, "order.created")
        .key(key)
        .header("seq", Long.toString(seq))
        .jsonPayload("{\"key\":\"" + key + "\",\"seq\":" + seq + "}")
        .build();
  }

  /** One message for each of keys {@code k0..k<keys-1>}, all with sequence number {@code seq}. */
  private static List<Message> round(String topic, int keys, long seq) {
    List<Message> out = new ArrayList<>();
    for (int k = 0; k < keys; k++) {
      out.add(message(topic, "k" + k, seq));
    }
    return out;
  }

  private void commit(List<Message> messages) {
    Outbox.postgres()
        .inTransaction(
            ds,
            tx -> {
              tx.writeAll(messages);
              return null;
            });
  }

  private void rollBack(List<Message> messages) {
    try {
      Outbox.postgres()
          .inTransaction(
              ds,
              tx -> {
                tx.writeAll(messages);
                throw new RolledBack();
              });
    } catch (RolledBack expected) {
      // the business transaction failed: its messages must never be published
    }
  }

  private static final class RolledBack extends RuntimeException {
    RolledBack() {
      super("rolled back on purpose");
    }
  }

  private boolean lastApplied(Subscription sub, List<Message> last) throws Exception {
    for (Message m : last) {
      if (effects.of(sub.name(), m.id()) == 0) {
        return false;
      }
    }
    return true;
  }

  private void assertKeyOrder(Subscription sub) throws Exception {
    effects
        .sequencesByKey(sub.name())
        .forEach((key, seqs) -> assertThat(seqs).as("order of " + key).isSorted());
  }

  private DeadLetter onlyDeadLetter() {
    List<DeadLetter> letters = transport.deadLetters().query(DeadLetterStore.Query.all(10));
    assertThat(letters).hasSize(1);
    return letters.get(0);
  }

  private static List<UUID> ids(List<Message> messages) {
    return messages.stream().map(Message::id).toList();
  }

  private static ConditionFactory waiting() {
    return await().atMost(WAIT).pollInterval(Duration.ofMillis(100));
  }
}
