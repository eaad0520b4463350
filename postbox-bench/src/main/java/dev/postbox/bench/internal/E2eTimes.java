package dev.postbox.bench.internal;

import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The instants of each event of an end-to-end run, by message id, all read from this host's wall
 * clock: the business commit (microseconds, right after {@code commit()} returned), the broker's
 * append stamp ({@code LogAppendTime}, milliseconds), the consumer's poll that returned it
 * (microseconds, in {@link E2eInterceptor}) and the commit of its effect (microseconds, right after
 * the effect's transaction committed). A consumer finds its recorder through the property {@link
 * #RECORDER} that {@link #consumerProperties()} gives it.
 */
final class E2eTimes implements AutoCloseable {

  /** The consumer property naming the recorder that {@link E2eInterceptor} reports to. */
  static final String RECORDER = "postbox.bench.e2e.recorder";

  private static final Map<String, E2eTimes> REGISTRY = new ConcurrentHashMap<>();
  private static final AtomicLong IDS = new AtomicLong();
  private static final Clock CLOCK = Clock.systemUTC();

  private final String id = "e2e-" + IDS.incrementAndGet();
  private final Map<UUID, Long> appendMs = new ConcurrentHashMap<>();
  private final Map<UUID, Long> pollMicros = new ConcurrentHashMap<>();
  private final Map<UUID, Long> effectMicros = new ConcurrentHashMap<>();
  private final AtomicLong effects = new AtomicLong();

  private E2eTimes() {}

  /** A new recorder, found by its consumers until closed. */
  static E2eTimes open() {
    E2eTimes t = new E2eTimes();
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

  /** A poll returned message {@code id}, appended at {@code appendedMs}; the first poll counts. */
  void polled(UUID message, long appendedMs, long atMicros) {
    appendMs.putIfAbsent(message, appendedMs);
    pollMicros.putIfAbsent(message, atMicros);
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
    appendMs.clear();
    pollMicros.clear();
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
    long[] append = new long[n];
    long[] poll = new long[n];
    long[] effect = new long[n];
    int i = 0;
    for (Map.Entry<UUID, Long> e : committedMicros.entrySet()) {
      Long a = appendMs.get(e.getKey());
      Long p = pollMicros.get(e.getKey());
      Long f = effectMicros.get(e.getKey());
      if (a == null || p == null || f == null) {
        continue;
      }
      commit[i] = e.getValue();
      append[i] = a;
      poll[i] = p;
      effect[i++] = f;
    }
    clear();
    return new E2eFigures.Events(
        java.util.Arrays.copyOf(commit, i),
        java.util.Arrays.copyOf(append, i),
        java.util.Arrays.copyOf(poll, i),
        java.util.Arrays.copyOf(effect, i));
  }

  @Override
  public void close() {
    REGISTRY.remove(id);
  }
}
