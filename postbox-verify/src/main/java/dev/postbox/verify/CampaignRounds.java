package dev.postbox.verify;

import java.io.PrintStream;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * The rounds of a campaign, for every transport: each round runs every scenario once; at least
 * {@code minRounds} rounds, then more until {@code targetInjections} faults fired; no scenario
 * round starts once the time box ran out. One result per scenario, its rounds merged.
 *
 * @param minRounds at least this many rounds
 * @param targetInjections then rounds until this many faults fired
 * @param timeBox no scenario round starts after this long ({@link Duration#ZERO}: no limit)
 * @param ticker the monotonic clock the time box is read from, nanoseconds
 */
record CampaignRounds(int minRounds, long targetInjections, Duration timeBox, LongSupplier ticker) {

  /** Rounds timed by {@link System#nanoTime()}. */
  CampaignRounds(int minRounds, long targetInjections, Duration timeBox) {
    this(minRounds, targetInjections, timeBox, System::nanoTime);
  }

  /** One round of one scenario. */
  @FunctionalInterface
  interface Round<S> {
    ScenarioResult run(S scenario, int round) throws Exception;
  }

  /** The rounds of {@code settings}. */
  static CampaignRounds of(Campaign.Settings settings) {
    return new CampaignRounds(
        settings.minRounds(), settings.targetInjections(), settings.timeBox());
  }

  /**
   * Runs the rounds of {@code scenarios} (named by {@code name}) with {@code round}, printing a
   * line per scenario round to {@code out} and handing the results so far to {@code progress} after
   * each.
   */
  <S> List<ScenarioResult> run(
      List<S> scenarios,
      Function<S, String> name,
      Round<S> round,
      PrintStream out,
      Consumer<List<ScenarioResult>> progress)
      throws Exception {
    Map<String, ScenarioResult> results = new LinkedHashMap<>();
    long injections = 0;
    int n = 0;
    long start = ticker.getAsLong();
    while (n < minRounds || injections < targetInjections) {
      n++;
      long before = injections;
      for (S s : scenarios) {
        if (outOfTime(start, ticker.getAsLong())) {
          out.println(
              "time box of "
                  + timeBox.toMinutes()
                  + " min reached; stopping before "
                  + name.apply(s)
                  + " round "
                  + n);
          return List.copyOf(results.values());
        }
        long roundStart = ticker.getAsLong();
        ScenarioResult r = round.run(s, n);
        long roundSeconds = (ticker.getAsLong() - roundStart) / 1_000_000_000L;
        injections += r.injections();
        results.merge(name.apply(s), r, ScenarioResult::merge);
        progress.accept(List.copyOf(results.values()));
        out.printf(
            "%s round %d: %d s, %d injections, %d messages, %d violations, recovery %d ms%s"
                + " (total injections %d)%n",
            name.apply(s),
            n,
            roundSeconds,
            r.injections(),
            r.findings().messages(),
            r.violations(),
            r.maxRecoveryMs(),
            r.inconclusive() ? ", INCONCLUSIVE " + r.inconclusiveReasons() : "",
            injections);
        out.flush();
      }
      if (injections == before) {
        // nothing could be injected (e.g. only the partitions scenario, without namespaces)
        out.println("no fault injected in round " + n + "; stopping");
        break;
      }
    }
    return List.copyOf(results.values());
  }

  /** Whether the time box, if any, has run out at {@code now} for rounds begun at {@code start}. */
  boolean outOfTime(long startNanos, long nowNanos) {
    return !timeBox.isZero() && nowNanos - startNanos >= timeBox.toNanos();
  }
}
