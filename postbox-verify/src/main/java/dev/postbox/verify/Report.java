package dev.postbox.verify;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The campaign's report: a text table and JSON (a published interface: keep keys stable). */
final class Report {

  /** Exit codes. */
  static final int OK = 0;

  static final int VIOLATION = 1;
  static final int INCONCLUSIVE = 3;

  /**
   * The version of the checker that judged a report ({@code checker_version} in its JSON): raised
   * whenever a change could turn an earlier OK into a violation or an inconclusive run, so that
   * {@link Ledger} counts only runs judged by the current rules. 2: a run that checked no scenario,
   * a skipped redis-window and, with the transactional relay, records without the relay's epoch
   * headers are inconclusive; unknown scenario names are refused. 3: a failed final offset audit
   * makes its scenario inconclusive. (Reports without the key: 1.)
   */
  static final int CHECKER_VERSION = 3;

  private final long seed;
  private final List<ScenarioResult> results;
  private final Instant started;
  private final Duration took;
  private final RunRecord record;
  private final Path faultLog;

  Report(long seed, List<ScenarioResult> results, Instant started, Duration took) {
    this(seed, results, started, took, null, null);
  }

  private Report(
      long seed,
      List<ScenarioResult> results,
      Instant started,
      Duration took,
      RunRecord record,
      Path faultLog) {
    this.seed = seed;
    this.results = results;
    this.started = started;
    this.took = took;
    this.record = record;
    this.faultLog = faultLog;
  }

  /**
   * This report with the run's provenance and its fault log ({@code faults.log}), written into the
   * JSON for the ledger.
   */
  Report withRecord(RunRecord record, Path faultLog) {
    return new Report(seed, results, started, took, record, faultLog);
  }

  boolean violated() {
    return results.stream().anyMatch(r -> r.violations() > 0);
  }

  /** Inconclusive when a scenario was, or when no scenario was checked at all. */
  boolean inconclusive() {
    return results.isEmpty() || results.stream().anyMatch(ScenarioResult::inconclusive);
  }

  int exitCode() {
    return violated() ? VIOLATION : inconclusive() ? INCONCLUSIVE : OK;
  }

  String result() {
    return violated() ? "VIOLATION" : inconclusive() ? "INCONCLUSIVE" : "OK";
  }

  void printText(PrintStream out) {
    out.println();
    out.printf("Postbox verify: seed %d, started %s, took %d s%n", seed, started, took.toSeconds());
    if (record != null) {
      out.printf(
          "transport %s%s, relay %s, consumer mode %s%n",
          record.transport(),
          record.cluster() ? " (cluster)" : "",
          record.relay(),
          record.consumerMode());
    }
    String fmt = "%-22s %6s %8s %5s %5s %6s %6s %7s %8s %6s %6s %6s %6s %6s %6s %6s %7s %9s  %s%n";
    out.printf(
        fmt,
        "scenario",
        "rounds",
        "messages",
        "lost",
        "dlq",
        "dupeff",
        "topdup",
        "stale",
        "stale-ep",
        "order",
        "offset",
        "zombie",
        "rb-pub",
        "rb-app",
        "parked",
        "unpark",
        "pg-lost",
        "recov-ms",
        "injections (fired per kind)");
    long total = 0;
    Map<String, Integer> perKind = new TreeMap<>();
    for (ScenarioResult r : results) {
      Findings f = r.findings();
      total += r.injections();
      r.faultsFired().forEach((k, v) -> perKind.merge(k, v, Integer::sum));
      out.printf(
          fmt,
          r.name(),
          r.rounds(),
          f.messages(),
          f.lost(),
          f.deadLettered(),
          f.duplicateEffects(),
          f.topicDuplicates(),
          f.staleRepublishes(),
          f.stalePublishes() + (f.staleIsViolation() ? "" : "~"),
          f.orderViolations(),
          rabbitmq() ? "n/a" : f.offsetViolations(),
          rabbitmq() ? "n/a" : f.zombieApplies(),
          f.rolledBackPublished(),
          f.rolledBackApplied(),
          f.parked(),
          f.unparked(),
          switch (f.postgresLoss()) {
            case NOT_CHECKED -> "-";
            case MEASURED -> f.lostByPostgres() + "~";
            case VIOLATION -> Long.toString(f.lostByPostgres());
          },
          r.maxRecoveryMs() + (r.recoveryBoundExceeded() ? "!" : ""),
          r.injections() + " " + r.faultsFired());
      if (r.inconclusive()) {
        out.println("    INCONCLUSIVE: " + r.inconclusiveReasons());
      }
      if (r.unexpectedExits() > 0) {
        out.println(
            "    "
                + r.unexpectedExits()
                + " unexpected process exits (not caused by an injected fault: unexpected-exit in"
                + " faults.log names each process, its exit code and its log)");
      }
      if (f.unstampedRecords() > 0) {
        out.println(
            "    "
                + f.unstampedRecords()
                + " records without the relay's lane/epoch header (not judged by stale-ep)");
      }
    }
    if (results.isEmpty()) {
      out.println("INCONCLUSIVE: no scenario was checked");
    }
    out.printf("total injections fired: %d %s%n", total, perKind);
    out.println(
        "lost, dlq (dead letters: the harness's consumers never mean to dead-letter), dupeff"
            + " (duplicate effects), order, offset (committed offset past an unfinished record),"
            + " zombie (applied after a successor took over), rb-pub/rb-app (rolled-back message"
            + " published/applied) must be 0; topdup and stale (republished after a later one of"
            + " its key) are measured only; stale-ep (stale publishes: a record whose relay epoch"
            + " is lower than one of its lane seen earlier in its partition) must be 0 with"
            + " --relay transactional and is measured only (marked ~) with the idempotent relay; parked/unpark (records into/out of the parking) must"
            + " be above 0 in the parking scenario; pg-lost (acknowledged commits, journaled by"
            + " the producers, that PostgreSQL no longer holds after a failover: its own loss, not"
            + " Postbox's) must be 0 with a synchronous standby, is measured only (~) with"
            + " --async-standby, and is - on one server (no standby, no journal). A scenario whose offset audit took no sample"
            + " or checked no record is INCONCLUSIVE, never a pass.");
    if (rabbitmq()) {
      out.println(NOT_CHECKED_ON_RABBITMQ);
    }
    out.println("result: " + result());
  }

  /**
   * Why the offset and zombie columns are not judged on RabbitMQ (printed as n/a, and in the JSON
   * as {@code not_checked}): a checker must not show a 0 it never looked for.
   */
  static final String NOT_CHECKED_ON_RABBITMQ =
      "on RabbitMQ, offset and zombie are n/a: there are no committed offsets (a delivery is acked"
          + " after its effect committed), and a shard's consumer changes only when the broker hands"
          + " the queue over (single active consumer); a late effect of the previous consumer meets"
          + " the inbox row of its message, so it shows as a duplicate effect or an order violation,"
          + " both judged.";

  private boolean rabbitmq() {
    return record != null && "rabbitmq".equals(record.transport());
  }

  void writeJson(Path file) throws IOException {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("seed", seed);
    root.put("ok", exitCode() == OK);
    root.put("result", result());
    root.put("started", started.toString());
    root.put("duration_s", took.toSeconds());
    root.put("checker_version", CHECKER_VERSION);
    if (record != null) {
      record.putInto(root, faultLog);
    }
    if (rabbitmq()) {
      root.put(
          "not_checked",
          Map.of("offset", NOT_CHECKED_ON_RABBITMQ, "zombie", NOT_CHECKED_ON_RABBITMQ));
    }
    long total = 0;
    List<Map<String, Object>> scenarios = new ArrayList<>();
    for (ScenarioResult r : results) {
      Findings f = r.findings();
      total += r.injections();
      Map<String, Object> s = new LinkedHashMap<>();
      s.put("name", r.name());
      s.put("rounds", r.rounds());
      s.put("injections", r.injections());
      s.put("faults_fired", r.faultsFired());
      s.put("faults_not_fired", r.faultsNotFired());
      s.put("messages", f.messages());
      s.put("rolled_back", f.rolledBack());
      s.put("lost", f.lost());
      s.put("lost_by_postgres", f.lostByPostgres());
      s.put("lost_by_postgres_judged", f.postgresLoss().name().toLowerCase(java.util.Locale.ROOT));
      s.put("dead_lettered", f.deadLettered());
      s.put("duplicate_effects", f.duplicateEffects());
      s.put("topic_records", f.topicRecords());
      s.put("topic_duplicates", f.topicDuplicates());
      s.put("stale_republishes", f.staleRepublishes());
      s.put("stale_publishes", f.stalePublishes());
      s.put("unstamped_records", f.unstampedRecords());
      s.put("stale_publishes_are_violations", f.staleIsViolation());
      s.put("order_violations", f.orderViolations());
      s.put("offset_violations", f.offsetViolations());
      s.put("offset_samples", f.offsetSamples());
      s.put("offset_records_checked", f.offsetRecordsChecked());
      s.put("offset_audit_failures", f.offsetAuditFailures());
      s.put("final_offset_audit_failed", f.finalAuditFailed());
      s.put("parked", f.parked());
      s.put("unparked", f.unparked());
      s.put("zombie_applies", f.zombieApplies());
      s.put("rolled_back_published", f.rolledBackPublished());
      s.put("rolled_back_applied", f.rolledBackApplied());
      s.put("max_recovery_ms", r.maxRecoveryMs());
      s.put("recovery_bound_exceeded", r.recoveryBoundExceeded());
      s.put("unexpected_exits", r.unexpectedExits());
      s.put("inconclusive", r.inconclusive());
      s.put("inconclusive_reasons", r.inconclusiveReasons());
      s.put("ok", r.violations() == 0 && !r.inconclusive());
      scenarios.add(s);
    }
    root.put("injections", total);
    root.put("scenarios", scenarios);
    if (file.getParent() != null) {
      Files.createDirectories(file.getParent());
    }
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), root);
  }
}
