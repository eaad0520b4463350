package dev.postbox.bench.internal;

import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.bench.internal.E2eFigures.Phase;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.ToDoubleFunction;

/**
 * The end-to-end race's report ({@link E2eRace}): per pipeline and rate, commit to effect committed
 * (p50, p99, p99.9: each the median of the rounds; the worst round's p99 beside it), each hop's p50
 * and p99 and its share of the slowest 1 %, the achieved rate and the CPU per event by process
 * kind; then each Postbox pipeline's p99 over its peer's (on the same broker).
 */
final class E2eReport {

  /** The peer pipeline the Kafka pipelines' ratios are taken against. */
  static final String PEER = "debezium_spring";

  /** The peer pipeline the RabbitMQ pipeline's ratios are taken against. */
  static final String RABBIT_PEER = "rabbit_spring";

  /** Each Postbox pipeline's peer, by key: the ratios are taken on the same broker. */
  static final Map<String, String> PEERS =
      Map.of("cdc", PEER, "polling", PEER, "rabbit_polling", RABBIT_PEER);

  /** What each peer pipeline is, for the ratios' notes. */
  private static final Map<String, String> PEER_WHAT =
      Map.of(
          PEER,
          "Debezium embedded -> Kafka -> Spring Kafka's batch listener",
          RABBIT_PEER,
          "the same polling relay -> RabbitMQ -> Spring AMQP's batch listener");

  /** What the hops are on Kafka: broker append stamp, poll, effect committed. */
  static final List<String> KAFKA_HOPS =
      List.of(
          "commit to the broker's append stamp (LogAppendTime, read at the middle of its"
              + " millisecond)",
          "broker append to the consumer's poll returning the record",
          "the consumer's poll to the effect's transaction committed");

  /** The targets for the p99, ms, by pipeline and rate. */
  static final Map<String, Double> TARGETS =
      Map.of("cdc_1k", 25.0, "cdc_half_max", 50.0, "polling_1k", 100.0);

  /** The target for a Postbox pipeline's p99 over the peer's (at least 2x better). */
  static final double MAX_VS_PEER = 0.5;

  /** Process kinds of {@link ProcessCpu}. */
  static final List<String> CPU_KINDS = List.of("jvm", "broker", "postgres");

  private E2eReport() {}

  /**
   * The report of the rounds of each pipeline ({@code byPipeline}: per pipeline key, one list of
   * phases per round, the same rates in the same order everywhere); {@code how} describes each.
   */
  static List<Measurement> measurements(
      double writerMax, Map<String, String> how, Map<String, List<List<Phase>>> byPipeline) {
    return measurements(writerMax, how, Map.of(), byPipeline);
  }

  /**
   * As {@link #measurements(double, Map, Map)}, with what each pipeline's three hops are ({@code
   * hops}, by pipeline key; {@link #KAFKA_HOPS} for a pipeline not named). A hop a pipeline did not
   * measure has no figures.
   */
  static List<Measurement> measurements(
      double writerMax,
      Map<String, String> how,
      Map<String, List<String>> hops,
      Map<String, List<List<Phase>>> byPipeline) {
    List<String> rateKeys = null;
    for (Map.Entry<String, List<List<Phase>>> e : byPipeline.entrySet()) {
      if (e.getValue().isEmpty()) {
        throw new IllegalArgumentException("no rounds of " + e.getKey());
      }
      for (List<Phase> round : e.getValue()) {
        List<String> keys = round.stream().map(Phase::key).toList();
        if (rateKeys == null) {
          rateKeys = keys;
        } else if (!rateKeys.equals(keys)) {
          throw new IllegalArgumentException("every round needs the same rates: " + keys);
        }
      }
    }
    List<Measurement> out = new ArrayList<>();
    out.add(
        Measurement.of("e2e_writers_max_per_s", writerMax, "tx/s")
            .note(
                LatencyBench.WRITERS
                    + " writers back to back (order row + outbox row per transaction) for a"
                    + " phase, with the first round's first pipeline streaming and consuming:"
                    + " half and a quarter of it are the half_max and quarter_max rates"));
    for (Map.Entry<String, List<List<Phase>>> e : byPipeline.entrySet()) {
      for (int i = 0; i < rateKeys.size(); i++) {
        out.addAll(
            figures(
                e.getKey(),
                how.getOrDefault(e.getKey(), ""),
                hops.getOrDefault(e.getKey(), KAFKA_HOPS),
                e.getValue(),
                i));
      }
    }
    for (String ours : byPipeline.keySet()) {
      String peer = PEERS.get(ours);
      if (peer == null || !byPipeline.containsKey(peer)) {
        continue;
      }
      for (int i = 0; i < rateKeys.size(); i++) {
        out.add(ratio(ours, byPipeline.get(ours), peer, byPipeline.get(peer), i));
      }
    }
    return out;
  }

  private static List<Measurement> figures(
      String pipeline, String how, List<String> hops, List<List<Phase>> rounds, int i) {
    String rate = rounds.get(0).get(i).key();
    String name = "e2e_" + pipeline + "_" + rate;
    List<Measurement> out = new ArrayList<>();
    String what = "commit to effect committed, " + how;
    out.add(median(name + "_p50_ms", rounds, i, p -> p.total(50), "ms", what));
    Measurement p99 =
        median(
            name + "_p99_ms", rounds, i, p -> p.total(99), "ms", what + "; " + rounds(rounds, i));
    Double target = TARGETS.get(pipeline + "_" + rate);
    out.add(target == null ? p99 : p99.target(Target.atMost(target)));
    out.add(median(name + "_p999_ms", rounds, i, p -> p.total(99.9), "ms", what));
    double[] p99s = column(rounds, i, p -> p.total(99));
    out.add(
        Measurement.of(name + "_p99_max_ms", Arrays.stream(p99s).max().orElse(0), "ms")
            .note("the worst round's p99 of " + list(p99s) + " ms"));
    out.add(
        median(
            name + "_achieved_per_s",
            rounds,
            i,
            Phase::achieved,
            "tx/s",
            "offered " + rounds.get(0).get(i).offered() + "/s; rounds " + achieved(rounds, i)));
    for (int h = 0; h < E2eFigures.HOPS.length; h++) {
      String hop = E2eFigures.HOPS[h];
      if (!rounds.get(0).get(i).latencies().has(hop)) {
        continue; // not measured on this pipeline (its how says why)
      }
      int index = h;
      String hopWhat = hops.get(h);
      out.add(
          median(name + "_hop_" + hop + "_p50_ms", rounds, i, p -> p.hop(hop, 50), "ms", hopWhat));
      out.add(
          median(name + "_hop_" + hop + "_p99_ms", rounds, i, p -> p.hop(hop, 99), "ms", hopWhat));
      out.add(
          median(
              name + "_hop_" + hop + "_tail_share_pct",
              rounds,
              i,
              p -> E2eFigures.tailShares(p.latencies(), 99)[index],
              "%",
              "share of "
                  + hopWhat
                  + " in the time of the slowest 1 % of events"
                  + (rounds.get(0).get(i).latencies().has("poll")
                      ? " (the three hops add up to 100)"
                      : " (of their commit-to-effect time)")));
    }
    String cpuWhat =
        "CPU microseconds per event during the phase: jvm = this JVM (writers, Postbox relay and"
            + " consumer, Spring's container), broker = its child processes (the Kafka broker;"
            + " for the RabbitMQ pipelines also the RabbitMQ node, started for their run only;"
            + " Debezium's JVM for the peer), postgres = the server and its backends (ended ones"
            + " too)";
    out.add(median(name + "_cpu_us_per_event", rounds, i, p -> cpu(p, "total"), "us", cpuWhat));
    for (String kind : CPU_KINDS) {
      out.add(
          median(
              name + "_cpu_" + kind + "_us_per_event",
              rounds,
              i,
              p -> cpu(p, kind),
              "us",
              cpuWhat));
    }
    return out;
  }

  private static Measurement ratio(
      String ours, List<List<Phase>> oursRounds, String peerKey, List<List<Phase>> peer, int i) {
    String rate = oursRounds.get(0).get(i).key();
    double o = E2eFigures.median(column(oursRounds, i, p -> p.total(99)));
    double t = E2eFigures.median(column(peer, i, p -> p.total(99)));
    String name = "e2e_" + ours + "_vs_" + peerKey + "_" + rate + "_p99";
    Measurement m =
        Measurement.of(name, o / Math.max(t, 1e-9), "x")
            .note(
                "e2e_"
                    + ours
                    + "_"
                    + rate
                    + "_p99_ms / e2e_"
                    + peerKey
                    + "_"
                    + rate
                    + "_p99_ms (baseline: the peer pipeline, "
                    + PEER_WHAT.get(peerKey)
                    + "; lower is better)");
    boolean targeted = ours.equals("cdc") && (rate.equals("1k") || rate.equals("half_max"));
    return targeted ? m.target(Target.atMost(MAX_VS_PEER)) : m;
  }

  private static double cpu(Phase p, String kind) {
    return Optional.ofNullable(p.cpuUs().get(kind)).orElse(0.0);
  }

  private static Measurement median(
      String name,
      List<List<Phase>> rounds,
      int i,
      ToDoubleFunction<Phase> f,
      String unit,
      String note) {
    double[] v = column(rounds, i, f);
    String of = v.length > 1 ? "median of the rounds " + list(v) + "; " : "";
    return Measurement.of(name, E2eFigures.median(v), unit).note(of + note);
  }

  private static String rounds(List<List<Phase>> rounds, int i) {
    StringBuilder b = new StringBuilder("rounds:");
    for (int r = 0; r < rounds.size(); r++) {
      Phase p = rounds.get(r).get(i);
      b.append(
          String.format(
              Locale.ROOT,
              " [%d] offered %,d/s, achieved %,.0f tx/s%s, %,d events, p99 %.1f ms;",
              r + 1,
              p.offered(),
              p.achieved(),
              p.sustained() ? "" : " (NOT sustained: a queue is measured)",
              p.latencies().totalMs().length,
              p.total(99)));
    }
    return b.toString();
  }

  private static String achieved(List<List<Phase>> rounds, int i) {
    return list(column(rounds, i, Phase::achieved));
  }

  private static double[] column(List<List<Phase>> rounds, int i, ToDoubleFunction<Phase> f) {
    return rounds.stream().mapToDouble(r -> f.applyAsDouble(r.get(i))).toArray();
  }

  private static String list(double[] v) {
    StringBuilder b = new StringBuilder("[");
    for (double d : v) {
      b.append(String.format(Locale.ROOT, "%.1f, ", d));
    }
    b.setLength(Math.max(1, b.length() - 2));
    return b.append(']').toString();
  }
}
