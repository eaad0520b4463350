package dev.postbox.bench.internal;

import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The instants of each event of an end-to-end run, by message id, all read from this host's wall
 * clock, in microseconds: the business commit (right after {@code commit()} returned), the broker's
 * acknowledgement (Kafka: the append stamp {@code LogAppendTime}, whole milliseconds read at their
 * middle; RabbitMQ: when the relay had its publisher confirm, {@link RelayConfirmTimes}), the
 * consumer's receipt (Kafka: the poll that returned it, in {@link E2eInterceptor}; Spring AMQP: the
 * container taking it) and the commit of its effect (right after the effect's transaction
 * committed). A recorder opened {@linkplain #open(boolean) without receipts} takes events without
 * that instant (a consumer that shows no receipt). A Kafka consumer finds its recorder through the
 * property {@link #RECORDER} that {@link #consumerProperties()} gives it.
 */
final class E2eTimes implements AutoCloseable {

  /** The consumer property naming the recorder that {@link E2eInterceptor} reports to. */
  static final String RECORDER = "postbox.bench.e2e.recorder";

  private static final Map<String, E2eTimes> REGISTRY = new ConcurrentHashMap<>();
  private static final AtomicLong IDS = new AtomicLong();
  private static final Clock CLOCK = Clock.systemUTC();

  private final String id = "e2e-" + IDS.incrementAndGet();
  private final boolean receipts;
  private final Map<UUID, Long> ackMicros = new ConcurrentHashMap<>();
  private final Map<UUID, Long> receiveMicros = new ConcurrentHashMap<>();
  private final Map<UUID, Long> effectMicros = new ConcurrentHashMap<>();
  private final AtomicLong effects = new AtomicLong();

  private E2eTimes(boolean receipts) {
    this.receipts = receipts;
  }

  /** A new recorder of every instant, found by its consumers until closed. */
  static E2eTimes open() {
    return open(true);
  }

  /**
   * A new recorder, found by its consumers until closed; without {@code receipts} it takes events
   * without the consumer's receipt, and its events carry none ({@link E2eFigures.Events}).
   */
  static E2eTimes open(boolean receipts) {
    E2eTimes t = new E2eTimes(receipts);
    REGISTRY.put(t.id, t);
    return t;
  }

  /** The recorder named {@code id}, or null once it is closed. */
  static E2eTimes lookup(String id) {
    return REGISTRY.get(id);
  }

  /** This host's wall clock in microseconds since the epoch. */
  static long nowMicros() {
    Instant now = CLOCK.instant();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
  }

  /** The properties that make a Kafka consumer report its polls here. */
  Map<String, Object> consumerProperties() {
    return Map.of("interceptor.classes", E2eInterceptor.class.getName(), RECORDER, id);
  }

  /**
   * A poll returned message {@code id}, stamped by the broker at {@code appendedMs} (truncated to
   * the millisecond: read at its middle, {@link BrokerAckTimes#STAMP_MIDPOINT_MS}); the first poll
   * counts.
   */
  void polled(UUID message, long appendedMs, long atMicros) {
    acked(message, appendedMs * 1_000L + Math.round(BrokerAckTimes.STAMP_MIDPOINT_MS * 1_000));
    received(message, atMicros);
  }

  /** The broker acknowledged message {@code id} at {@code atMicros}; the first counts. */
  void acked(UUID message, long atMicros) {
    ackMicros.putIfAbsent(message, atMicros);
  }

  /** How many messages have an acknowledgement instant (since the last {@link #clear()}). */
  int acks() {
    return ackMicros.size();
  }

  /** When message {@code id} was acknowledged, if it was. */
  java.util.OptionalLong ackedAt(UUID message) {
    Long at = ackMicros.get(message);
    return at == null ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(at);
  }

  /** The consumer received message {@code id} at {@code atMicros}; the first receipt counts. */
  void received(UUID message, long atMicros) {
    receiveMicros.putIfAbsent(message, atMicros);
  }

  /** The effect of message {@code id} committed at {@code atMicros}; the first commit counts. */
  void applied(UUID message, long atMicros) {
    if (effectMicros.putIfAbsent(message, atMicros) == null) {
      effects.incrementAndGet();
    }
  }

  /** Effects committed since the last {@link #clear()}. */
  long effects() {
    return effects.get();
  }

  /** Forgets every instant (after a phase whose events are not measured). */
  void clear() {
    ackMicros.clear();
    receiveMicros.clear();
    effectMicros.clear();
    effects.set(0);
  }

  /**
   * The instants of the events committed at {@code committedMicros}, then {@link #clear()}: an
   * event missing an instant (none once every effect is awaited) is left out.
   */
  E2eFigures.Events take(Map<UUID, Long> committedMicros) {
    int n = committedMicros.size();
    long[] commit = new long[n];
    long[] ack = new long[n];
    long[] receive = new long[n];
    long[] effect = new long[n];
    int i = 0;
    for (Map.Entry<UUID, Long> e : committedMicros.entrySet()) {
      Long a = ackMicros.get(e.getKey());
      Long r = receiveMicros.get(e.getKey());
      Long f = effectMicros.get(e.getKey());
      if (a == null || (receipts && r == null) || f == null) {
        continue;
      }
      commit[i] = e.getValue();
      ack[i] = a;
      receive[i] = receipts ? r : 0;
      effect[i++] = f;
    }
    clear();
    return new E2eFigures.Events(
        java.util.Arrays.copyOf(commit, i),
        java.util.Arrays.copyOf(ack, i),
        receipts ? java.util.Arrays.copyOf(receive, i) : null,
        java.util.Arrays.copyOf(effect, i));
  }

  @Override
  public void close() {
    REGISTRY.remove(id);
  }
}
