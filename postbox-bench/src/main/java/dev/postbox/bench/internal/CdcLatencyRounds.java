package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.Target;
import dev.postbox.bench.internal.CdcLatencyBench.Phase;
import dev.postbox.jdbc.cdc.CdcRelay;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * The CDC relay and Debezium's embedded connector in alternating rounds at the rates of the latency
 * target ({@code ./postbox bench --only ackrounds}, issue 15): each streamer's p99 per rate as the
 * median of its rounds, every round's p99 beside it.
 *
 * <p><b>Why rounds.</b> A p99 over one 10 s phase of 1,000 events/s is decided by the 100 slowest
 * events, so a single stall of the machine (a hypervisor's steal, an I/O stall of the virtual disk:
 * both recorded in the phase's tail note) that holds up a few hundred of them decides it, whichever
 * streamer happens to run then. The {@code acklatency} race runs each streamer once, one after the
 * other, so a stall lands on one of them only. Here each round runs both streamers one after the
 * other, the relay first in odd rounds and Debezium first in even ones, each started afresh on its
 * own schema and slot with the {@code acklatency} race's method ({@link CdcLatencyBench}: the same
 * open-loop writers, warm-up, clock and broker stamp). The median of {@value #ROUNDS} rounds is a
 * p99 that one stall cannot decide; the worst round ({@code _p99_max_ms}) and the count of phases
 * within the target are reported too, so nothing is hidden.
 *
 * <p><b>Rates.</b> The fixed rates, 1,000, 2,000 and 5,000 events/s (at or past the
 * writers' maximum on a slow 2-core machine: the note then says the rate was not sustained and a
 * queue is measured), then half and a quarter of the writers' maximum, measured with the relay
 * streaming in the first round.
 */
public final class CdcLatencyRounds {

  /** Rounds per streamer. */
  static final int ROUNDS = 3;

  /** The fixed offered rates, events/s (the target's). */
  static final int[] RATES = CdcLatencyBench.RATES;

  private static final String RELAY = "cdc_rounds_latency_";
  private static final String DEBEZIUM = "cdc_rounds_debezium_latency_";

  private final CdcLatencyBench bench;
  private final PrintStream log;

  public CdcLatencyRounds(BenchEnv env, BenchConfig config, PrintStream log) {
    this.bench = new CdcLatencyBench(env, config, false);
    this.log = log;
  }

  /** The writers' maximum, then per rate each streamer's median p50 and p99 and the ratio. */
  public List<Measurement> run() throws Exception {
    List<List<Phase>> relay = new ArrayList<>();
    List<List<Phase>> dbz = new ArrayList<>();
    double writerMax = 0;
    for (int r = 1; r <= ROUNDS; r++) {
      if (r % 2 == 0) {
        dbz.add(debezium(r, writerMax));
      }
      CdcLatencyBench.CdcRun run =
          bench.cdcPhases(
              "cdcrnd" + r,
              "rnd",
              RELAY,
              CdcRelay.DEFAULT_BATCH_LINGER,
              CdcRelay.DEFAULT_BINARY_VALUES,
              writerMax,
              RATES);
      writerMax = run.writerMax();
      relay.add(run.phases());
      log.printf(Locale.ROOT, "bench: ackrounds round %d, CDC relay: %s%n", r, p99s(run.phases()));
      if (r % 2 == 1) {
        dbz.add(debezium(r, writerMax));
      }
    }
    List<Measurement> out = new ArrayList<>(measurements(writerMax, relay, dbz));
    out.add(
        Measurement.of("cdc_rounds_server_connections", bench.peakConnections(), "connections")
            .note(
                "the most connections (client backends and WAL senders, both counted against"
                    + " max_connections) open on the PostgreSQL server at the end of a streamer's"
                    + " phases, over every round: each streamer's pool ("
                    + (LatencyBench.WRITERS + 8)
                    + " connections at most) is closed after its run, so the rounds need no more"
                    + " than one streamer's"));
    return out;
  }

  private List<Phase> debezium(int round, double writerMax) throws Exception {
    List<Phase> phases = bench.debeziumPhases("cdcrnd_dbz" + round, writerMax, RATES);
    log.printf(Locale.ROOT, "bench: ackrounds round %d, Debezium: %s%n", round, p99s(phases));
    return phases;
  }

  private static String p99s(List<Phase> phases) {
    StringBuilder b = new StringBuilder();
    for (Phase p : phases) {
      b.append(String.format(Locale.ROOT, "%s p99 %.1f ms; ", p.key(), p.percentile(99)));
    }
    return b.toString().trim();
  }

  /**
   * The report of {@code relay}'s and {@code dbz}'s rounds (one list of phases per round, the same
   * rates in the same order in each).
   */
  static List<Measurement> measurements(
      double writerMax, List<List<Phase>> relay, List<List<Phase>> dbz) {
    if (relay.isEmpty() || relay.size() != dbz.size()) {
      throw new IllegalArgumentException(
          "each streamer needs the same number of rounds, at least one: "
              + relay.size()
              + " and "
              + dbz.size());
    }
    for (List<Phase> round : concat(relay, dbz)) {
      if (round.size() != relay.get(0).size()) {
        throw new IllegalArgumentException("every round needs the same rates: " + round.size());
      }
    }
    List<Measurement> out = new ArrayList<>();
    out.add(
        Measurement.of("cdc_rounds_writer_max_tx_per_s", writerMax, "tx/s")
            .note(
                LatencyBench.WRITERS
                    + " writers back to back with the CDC relay streaming, in the first round: half"
                    + " and a quarter of it are the half_max and quarter_max rates"));
    int within = 0;
    int targeted = 0;
    for (int i = 0; i < relay.get(0).size(); i++) {
      String key = relay.get(0).get(i).key();
      boolean target = !key.endsWith("_max");
      double[] relayP99 = column(relay, i, p -> p.percentile(99));
      for (double v : relayP99) {
        if (target) {
          targeted++;
          within += v <= CdcLatencyBench.MAX_P99_MS ? 1 : 0;
        }
      }
      Measurement ours = p99(RELAY + key, relay, i, target);
      Measurement theirs = p99(DEBEZIUM + key, dbz, i, false);
      out.add(p50(RELAY + key, relay, i));
      out.add(ours);
      out.add(worst(RELAY + key, relay, i));
      out.add(p50(DEBEZIUM + key, dbz, i));
      out.add(theirs);
      out.add(worst(DEBEZIUM + key, dbz, i));
      out.add(
          Measurement.of(
                  RELAY + key + "_p99_vs_debezium",
                  ours.value() / Math.max(theirs.value(), 1e-9),
                  "x")
              .note(RELAY + key + "_p99_ms / " + DEBEZIUM + key + "_p99_ms (lower is better)"));
    }
    out.add(
        Measurement.of("cdc_rounds_latency_phases_within_target", within, "phases")
            .note(
                String.format(
                    Locale.ROOT,
                    "CDC relay phases (rounds x fixed rates) with a p99 within %.0f ms, of %d",
                    CdcLatencyBench.MAX_P99_MS,
                    targeted)));
    return out;
  }

  private static List<List<Phase>> concat(List<List<Phase>> a, List<List<Phase>> b) {
    List<List<Phase>> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  private static double[] column(List<List<Phase>> rounds, int i, ToDoubleFunction<Phase> f) {
    return rounds.stream().mapToDouble(r -> f.applyAsDouble(r.get(i))).toArray();
  }

  private static Measurement p50(String name, List<List<Phase>> rounds, int i) {
    double[] v = column(rounds, i, p -> p.percentile(50));
    return Measurement.of(name + "_p50_ms", median(v), "ms")
        .note("median of the rounds' p50s " + list(v) + " ms");
  }

  private static Measurement p99(String name, List<List<Phase>> rounds, int i, boolean target) {
    double[] v = column(rounds, i, p -> p.percentile(99));
    StringBuilder note =
        new StringBuilder("median of the rounds' p99s ")
            .append(list(v))
            .append(" ms (commit to the broker's append stamp, as in cdc_latency_); rounds:");
    for (int r = 0; r < rounds.size(); r++) {
      Phase p = rounds.get(r).get(i);
      note.append(
          String.format(
              Locale.ROOT,
              " [%d] offered %,d/s, achieved %,.0f tx/s%s, %,d events, CPU per event %.0f us;"
                  + " tail: %s",
              r + 1,
              p.offered(),
              p.achieved(),
              p.sustained() ? "" : " (NOT sustained: a queue is measured)",
              p.sortedMs().length,
              p.cpuUs().getOrDefault("total", 0.0),
              p.stalls()));
    }
    Measurement m = Measurement.of(name + "_p99_ms", median(v), "ms").note(note.toString());
    return target ? m.target(Target.atMost(CdcLatencyBench.MAX_P99_MS)) : m;
  }

  private static Measurement worst(String name, List<List<Phase>> rounds, int i) {
    double[] v = column(rounds, i, p -> p.percentile(99));
    return Measurement.of(name + "_p99_max_ms", Arrays.stream(v).max().orElse(0), "ms")
        .note("the worst round's p99 of " + list(v) + " ms");
  }

  /** The median of {@code v} (the mean of the middle two for an even count). */
  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    int n = s.length;
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
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
