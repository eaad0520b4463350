package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.kafka.KafkaRelayPublisher;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Commit to broker acknowledgement of the polling relay (defaults) at a fixed offered rate, on one
 * Kafka: {@link LatencyBench}'s open loop of {@link LatencyBench#WRITERS} writers (order row +
 * outbox row per transaction), each commit's instant read from the wall clock right after {@code
 * commit()} returned, and each acknowledgement's when the relay had its publish outcome ({@link
 * RelayConfirmTimes}, the relay's own reading of the producer's {@code acks=all} callbacks). Not
 * the broker's append stamp ({@link BrokerAckTimes}): on a replicated topic the leader stamps a
 * record when it appends it, before the followers have it, so the stamp would leave replication out
 * of a cluster's figure. Not thread-safe (one run at a time).
 */
final class ClusterAckLatency {

  /** The offered rate, transactions (events) per second. */
  static final int RATE = 1_000;

  /** The untimed phase at {@link #RATE} before the timed one. */
  static final Duration WARM_UP = Duration.ofSeconds(2);

  private static final Duration NO_PROGRESS = Duration.ofSeconds(60);

  /**
   * One timed phase.
   *
   * @param p50 median commit to acknowledgement, ms
   * @param p99 99th percentile, ms
   * @param achieved transactions per second the writers reached
   * @param events events measured
   */
  record Phase(double p50, double p99, double achieved, int events) {

    /** How it was measured, for a note. */
    String note(String where) {
      return String.format(
          Locale.ROOT,
          "%s: polling relay (defaults), offered %,d tx/s by %d writers for the phase, achieved"
              + " %,.0f tx/s (%,d events); commit returned to the relay holding the acks=all"
              + " outcome, after a %d s warm-up at the same rate",
          where,
          RATE,
          LatencyBench.WRITERS,
          achieved,
          events,
          WARM_UP.toSeconds());
    }
  }

  private final BenchConfig config;

  ClusterAckLatency(BenchConfig config) {
    this.config = config;
  }

  /** The phase on {@code on}'s Kafka, with a new schema and topic ({@code what} names them). */
  Phase measure(BenchEnv on, String what) throws InterruptedException {
    Db db = on.database(what, LatencyBench.WRITERS + 8);
    String topic = on.primedTopic(what, ConsumerBench.PARTITIONS);
    try (E2eTimes times = E2eTimes.open(false);
        Relay relay =
            Relay.builder(
                    PostgresRelayStore.create(db.dataSource()),
                    new RelayConfirmTimes(
                        KafkaRelayPublisher.builder(on.bootstrap()).build(), times))
                .instanceId("bench-" + what)
                .build()) {
      relay.start();
      WriteBench.BusinessTx tx =
          new WriteBench.BusinessTx(db, Optional.of(Outbox.postgres()), topic);
      Map<UUID, Long> warm = new ConcurrentHashMap<>();
      LatencyBench.offer(tx, RATE, WARM_UP, warm, E2eTimes::nowMicros);
      BenchEnv.awaitCount(what + " warm-up acks", times::acks, warm.size(), NO_PROGRESS);
      times.clear();
      Map<UUID, Long> committed = new ConcurrentHashMap<>();
      long t0 = System.nanoTime();
      LatencyBench.offer(tx, RATE, config.latencyPhase(), committed, E2eTimes::nowMicros);
      double achieved = Rate.since(t0, committed.size());
      BenchEnv.awaitCount(what + " acks", times::acks, committed.size(), NO_PROGRESS);
      double[] ms =
          committed.entrySet().stream()
              .mapToDouble(e -> latencyMs(times.ackedAt(e.getKey()), e.getValue()))
              .filter(Double::isFinite)
              .toArray();
      Arrays.sort(ms);
      if (ms.length == 0) {
        throw new IllegalStateException(what + ": no event acknowledged");
      }
      return new Phase(
          OpenLoop.percentile(ms, 50), OpenLoop.percentile(ms, 99), achieved, ms.length);
    } finally {
      db.dataSource().close(); // after the relay's close
    }
  }

  private static double latencyMs(OptionalLong ackMicros, long commitMicros) {
    return ackMicros.isPresent()
        ? Math.max(0, ackMicros.getAsLong() - commitMicros) / 1_000.0
        : Double.NaN;
  }
}
