package dev.postbox.verify;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What one scenario (all its rounds) injected and what the history check found.
 *
 * @param inconclusiveReasons why the scenario cannot count as a pass (a scheduled fault that did
 *     not fire, an offset audit without samples, nothing parked in a parking scenario...); empty
 *     when conclusive
 */
record ScenarioResult(
    String name,
    int rounds,
    int injections,
    Map<String, Integer> faultsFired,
    Map<String, Integer> faultsNotFired,
    Findings findings,
    long maxRecoveryMs,
    boolean recoveryBoundExceeded,
    int unexpectedExits,
    List<String> inconclusiveReasons) {

  boolean inconclusive() {
    return !inconclusiveReasons.isEmpty();
  }

  long violations() {
    return findings.violations() + (recoveryBoundExceeded ? 1 : 0);
  }

  /** A scenario that could not run here: nothing checked, inconclusive for {@code why}. */
  static ScenarioResult notRun(String name, String why) {
    return new ScenarioResult(
        name, 1, 0, Map.of(), Map.of(), Findings.NONE, 0, false, 0, List.of("not run: " + why));
  }

  ScenarioResult merge(ScenarioResult o) {
    Map<String, Integer> fired = new TreeMap<>(faultsFired);
    o.faultsFired.forEach((k, v) -> fired.merge(k, v, Integer::sum));
    Map<String, Integer> notFired = new TreeMap<>(faultsNotFired);
    o.faultsNotFired.forEach((k, v) -> notFired.merge(k, v, Integer::sum));
    List<String> reasons = new ArrayList<>(inconclusiveReasons);
    reasons.addAll(o.inconclusiveReasons);
    return new ScenarioResult(
        name,
        rounds + o.rounds,
        injections + o.injections,
        fired,
        notFired,
        findings.plus(o.findings),
        Math.max(maxRecoveryMs, o.maxRecoveryMs),
        recoveryBoundExceeded || o.recoveryBoundExceeded,
        unexpectedExits + o.unexpectedExits,
        reasons);
  }
}
