package dev.postbox.bench.internal;

import java.util.Arrays;
import java.util.Map;

/**
 * The pure arithmetic of the end-to-end race: per event, commit to effect committed and its three
 * hops; their percentiles; the hops' shares of the slowest events; the median over rounds.
 */
final class E2eFigures {

  /** The broker stamps with millisecond resolution (truncated): read at its middle. */
  static final double STAMP_MIDPOINT_MS = BrokerAckTimes.STAMP_MIDPOINT_MS;

  /** The hops of an event, in order. */
  static final String[] HOPS = {"ack", "poll", "apply"};

  private E2eFigures() {}

  /**
   * Each event's instants (aligned by index): business commit, broker append stamp, the consumer's
   * poll that returned it, its effect's commit.
   *
   * @param commitMicros wall clock, microseconds
   * @param appendMs the broker's {@code LogAppendTime}, milliseconds
   * @param pollMicros wall clock, microseconds
   * @param effectMicros wall clock, microseconds
   */
  record Events(long[] commitMicros, long[] appendMs, long[] pollMicros, long[] effectMicros) {
    Events {
      int n = commitMicros.length;
      if (appendMs.length != n || pollMicros.length != n || effectMicros.length != n) {
        throw new IllegalArgumentException("every event needs its four instants");
      }
    }

    int size() {
      return commitMicros.length;
    }
  }

  /**
   * Each event's latencies in ms (aligned by index, not sorted): commit to effect committed, and
   * its hops commit to broker append ({@code ack}), append to the consumer's poll ({@code poll}),
   * poll to effect committed ({@code apply}). The two hops that meet at the broker's stamp read up
   * to half a millisecond off; a reading below 0 counts as 0.
   */
  record Latencies(double[] totalMs, double[] ackMs, double[] pollMs, double[] applyMs) {
    double[] hop(String name) {
      return switch (name) {
        case "ack" -> ackMs;
        case "poll" -> pollMs;
        case "apply" -> applyMs;
        default -> throw new IllegalArgumentException("no hop " + name);
      };
    }
  }

  /** The latencies of {@code e}. */
  static Latencies latencies(Events e) {
    int n = e.size();
    double[] total = new double[n];
    double[] ack = new double[n];
    double[] poll = new double[n];
    double[] apply = new double[n];
    for (int i = 0; i < n; i++) {
      double commit = e.commitMicros()[i] / 1_000.0;
      double append = e.appendMs()[i] + STAMP_MIDPOINT_MS;
      double polled = e.pollMicros()[i] / 1_000.0;
      double effect = e.effectMicros()[i] / 1_000.0;
      total[i] = Math.max(0, effect - commit);
      ack[i] = Math.max(0, append - commit);
      poll[i] = Math.max(0, polled - append);
      apply[i] = Math.max(0, effect - polled);
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
   * 100. Empty events give 0 for each.
   */
  static double[] tailShares(Latencies l, double p) {
    double[] out = new double[HOPS.length];
    if (l.totalMs().length == 0) {
      return out;
    }
    double threshold = percentile(l.totalMs(), p);
    double[] sums = new double[HOPS.length];
    for (int i = 0; i < l.totalMs().length; i++) {
      if (l.totalMs()[i] >= threshold) {
        for (int h = 0; h < HOPS.length; h++) {
          sums[h] += l.hop(HOPS[h])[i];
        }
      }
    }
    double all = Arrays.stream(sums).sum();
    for (int h = 0; h < HOPS.length; h++) {
      out[h] = all <= 0 ? 0 : 100 * sums[h] / all;
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

    double hop(String name, double p) {
      return percentile(latencies.hop(name), p);
    }

    boolean sustained() {
      return achieved >= 0.9 * offered;
    }
  }
}
