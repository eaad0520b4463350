package dev.postbox.bench.internal;

import java.util.Arrays;
import java.util.Map;

/**
 * The pure arithmetic of the end-to-end race: per event, commit to effect committed and its three
 * hops; their percentiles; the hops' shares of the slowest events; the median over rounds.
 */
final class E2eFigures {

  /** The hops of an event, in order. */
  static final String[] HOPS = {"ack", "poll", "apply"};

  private E2eFigures() {}

  /**
   * Each event's instants (aligned by index), wall clock in microseconds: business commit, the
   * broker's acknowledgement, the consumer's receipt, its effect's commit.
   *
   * @param commitMicros the business commit
   * @param ackMicros the broker's acknowledgement (Kafka: its append stamp, read at the middle of
   *     its millisecond; RabbitMQ: the relay's publisher confirm)
   * @param receiveMicros the consumer's receipt (Kafka: its poll), or null when the consumer shows
   *     none: the two hops on either side of it are then absent
   * @param effectMicros the commit of the effect
   */
  record Events(long[] commitMicros, long[] ackMicros, long[] receiveMicros, long[] effectMicros) {
    Events {
      int n = commitMicros.length;
      if (ackMicros.length != n
          || (receiveMicros != null && receiveMicros.length != n)
          || effectMicros.length != n) {
        throw new IllegalArgumentException("every event needs its four instants");
      }
    }

    int size() {
      return commitMicros.length;
    }
  }

  /**
   * Each event's latencies in ms (aligned by index, not sorted): commit to effect committed, and
   * its hops commit to the broker's acknowledgement ({@code ack}), acknowledgement to the
   * consumer's receipt ({@code poll}), receipt to effect committed ({@code apply}); {@code pollMs}
   * and {@code applyMs} are null when the receipt was not measured. An acknowledgement read after
   * the receipt (after the effect's commit when the receipt was not measured) counts at it, so the
   * hops add up to the total: the broker acknowledged before it delivered, and the reading is late
   * (Kafka: the stamp's millisecond read at its middle, up to half a millisecond off; RabbitMQ: the
   * relay reads its confirms per batch, after claiming or marking). A hop read below 0 counts as 0.
   */
  record Latencies(double[] totalMs, double[] ackMs, double[] pollMs, double[] applyMs) {
    /** The hop's latencies, or null when it was not measured. */
    double[] hop(String name) {
      return switch (name) {
        case "ack" -> ackMs;
        case "poll" -> pollMs;
        case "apply" -> applyMs;
        default -> throw new IllegalArgumentException("no hop " + name);
      };
    }

    boolean has(String hop) {
      return hop(hop) != null;
    }
  }

  /** The latencies of {@code e}. */
  static Latencies latencies(Events e) {
    int n = e.size();
    boolean receipts = e.receiveMicros() != null;
    double[] total = new double[n];
    double[] ack = new double[n];
    double[] poll = receipts ? new double[n] : null;
    double[] apply = receipts ? new double[n] : null;
    for (int i = 0; i < n; i++) {
      double commit = e.commitMicros()[i] / 1_000.0;
      double effect = e.effectMicros()[i] / 1_000.0;
      double received = receipts ? e.receiveMicros()[i] / 1_000.0 : effect;
      double acked = Math.min(e.ackMicros()[i] / 1_000.0, received);
      total[i] = Math.max(0, effect - commit);
      ack[i] = Math.max(0, acked - commit);
      if (receipts) {
        poll[i] = Math.max(0, received - acked);
        apply[i] = Math.max(0, effect - received);
      }
    }
    return new Latencies(total, ack, poll, apply);
  }

  /**
   * The {@code p}-th percentile (0-100, nearest rank) of {@code values} (any order); 0 when empty.
   */
  static double percentile(double[] values, double p) {
    if (values.length == 0) {
      return 0;
    }
    double[] s = values.clone();
    Arrays.sort(s);
    return OpenLoop.percentile(s, p);
  }

  /**
   * Each hop's share, in percent, of the time of the events at or above the {@code p}-th percentile
   * of the total (the tail): sum of the hop over sum of the three hops, so the shares add up to
   * 100; when a hop was not measured, over the sum of the totals instead, and NaN for the hops not
   * measured. Empty events give 0 for each measured hop.
   */
  static double[] tailShares(Latencies l, double p) {
    double[] out = new double[HOPS.length];
    boolean all = true;
    for (int h = 0; h < HOPS.length; h++) {
      if (!l.has(HOPS[h])) {
        out[h] = Double.NaN;
        all = false;
      }
    }
    if (l.totalMs().length == 0) {
      return out;
    }
    double threshold = percentile(l.totalMs(), p);
    double[] sums = new double[HOPS.length];
    double totals = 0;
    for (int i = 0; i < l.totalMs().length; i++) {
      if (l.totalMs()[i] >= threshold) {
        totals += l.totalMs()[i];
        for (int h = 0; h < HOPS.length; h++) {
          if (l.has(HOPS[h])) {
            sums[h] += l.hop(HOPS[h])[i];
          }
        }
      }
    }
    double of = all ? Arrays.stream(sums).sum() : totals;
    for (int h = 0; h < HOPS.length; h++) {
      if (l.has(HOPS[h])) {
        out[h] = of <= 0 ? 0 : 100 * sums[h] / of;
      }
    }
    return out;
  }

  /** The median of {@code v} (the mean of the middle two for an even count); NaN when empty. */
  static double median(double[] v) {
    return v.length == 0 ? Double.NaN : CdcLatencyRounds.median(v);
  }

  /** Half of the writers' maximum, rounded to 10/s, at least 10/s. */
  static int halfMax(double writerMax) {
    return CdcLatencyBench.halfMax(writerMax);
  }

  /** A quarter of the writers' maximum, rounded to 10/s, at least 10/s. */
  static int quarterMax(double writerMax) {
    return CdcLatencyBench.quarterMax(writerMax);
  }

  /**
   * One offered rate's result for one pipeline in one round.
   *
   * @param key the rate's part of the figure names ({@code 1k}, {@code half_max})
   * @param offered events/s offered
   * @param achieved transactions/s the writers committed
   * @param latencies every measured event's latencies
   * @param cpuUs CPU microseconds per event by process kind, and their {@code total}
   */
  record Phase(
      String key, int offered, double achieved, Latencies latencies, Map<String, Double> cpuUs) {
    double total(double p) {
      return percentile(latencies.totalMs(), p);
    }

    /** The hop's {@code p}-th percentile; NaN when it was not measured. */
    double hop(String name, double p) {
      return latencies.has(name) ? percentile(latencies.hop(name), p) : Double.NaN;
    }

    boolean sustained() {
      return achieved >= 0.9 * offered;
    }
  }
}
