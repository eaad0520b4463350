package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The ledger counts only what it can recount: OK runs of the current checker on committed code,
 * their faults recounted from the fault list; every planted defect of a report keeps it out.
 */
class LedgerTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  /** A real report of one scenario with 3 fired faults and 1 that did not fire. */
  private Path report(String file, long seed, RunRecord record) throws Exception {
    Path run = Files.createDirectories(dir.resolve("run-" + file));
    Path faults = run.resolve("faults.log");
    try (FaultLog log = new FaultLog(faults)) {
      log.beginScenario("kill-9");
      log.fired("kill-9", "relay-a#16 (pid 25214)", "SIGKILL; process gone");
      log.fired("kill-9", "consumer-2", "pid 18");
      log.notFired("pause-relay", "relay-2", "ended by the heal");
      log.fired("relay.after-send-before-mark", "relay-1", "exit 86");
      log.note("heal", "");
    }
    Findings f =
        Findings.builder()
            .messages(50)
            .topicRecords(50)
            .offsetSamples(3)
            .offsetRecordsChecked(3)
            .build();
    ScenarioResult r =
        new ScenarioResult(
            "kill-9",
            1,
            3,
            Map.of("kill-9", 2),
            Map.of("pause-relay", 1),
            f,
            40,
            false,
            0,
            List.of());
    Path out = Files.createDirectories(dir.resolve("runs")).resolve(file);
    new Report(seed, List.of(r), Instant.parse("2026-12-04T10:00:00Z"), Duration.ofSeconds(90))
        .withRecord(record, faults)
        .writeJson(out);
    return out;
  }

  private static RunRecord committed() {
    return new RunRecord(
        List.of("--quick", "--seed", "1"),
        "kafka",
        "idempotent",
        "inbox",
        "8d9a95f0000000000000000000000000000000aa",
        false,
        Map.of("cores", 2));
  }

  private void edit(Path file, String field, Object value) throws Exception {
    Map<String, Object> root = JSON.readValue(file.toFile(), Map.class);
    root.put(field, value);
    JSON.writeValue(file.toFile(), root);
  }

  @Test
  void aReportCarriesItsProvenanceAndEveryFault() throws Exception {
    Path file = report("a.json", 1, committed());
    JsonNode r = JSON.readTree(file.toFile());
    assertThat(r.path("checker_version").asInt()).isEqualTo(Report.CHECKER_VERSION);
    assertThat(r.path("commit").asText()).startsWith("8d9a95f");
    assertThat(r.path("transport").asText()).isEqualTo("kafka");
    assertThat(r.path("command").toString()).contains("--seed");
    assertThat(r.path("faults")).hasSize(4);
    assertThat(r.path("faults").get(2).path("outcome").asText()).isEqualTo("not-fired");
    assertThat(r.path("faults").get(0).path("kind").asText()).isEqualTo("kill-9");
    // a target with spaces (a process and its pid), as the campaign writes them
    assertThat(r.path("faults").get(0).path("target").asText()).isEqualTo("relay-a#16 (pid 25214)");
    assertThat(r.path("faults").get(0).path("outcome").asText()).isEqualTo("fired");
  }

  @Test
  void everyLineOfARealFaultLogIsReadWithItsOutcome() {
    assertThat(
            RunRecord.fault(
                "2026-12-04T19:54:00.280Z kill-9#1 kill-9 relay-a#16 (pid 25214) fired SIGKILL;"
                    + " process gone"))
        .containsEntry("target", "relay-a#16 (pid 25214)")
        .containsEntry("outcome", "fired");
    assertThat(
            RunRecord.fault(
                "2026-12-04T19:54:00Z mixed#1 pause-relay relay-b not-fired ended by the heal"))
        .containsEntry("target", "relay-b")
        .containsEntry("outcome", "not-fired");
    assertThat(RunRecord.fault("2026-12-04T19:54:00Z mixed#1 heal - note drained in 3 s")).isNull();
    assertThat(RunRecord.fault("2026-12-04T19:54:00Z mixed#1 scenario - begin")).isNull();
  }

  @Test
  void onlyOkRunsOfTheCurrentCheckerOnCommittedCodeCountOnce() throws Exception {
    report("01-ok.json", 1, committed());
    Files.copy(dir.resolve("runs/01-ok.json"), dir.resolve("runs/02-copy-of-ok.json"));
    edit(report("03-inconclusive.json", 3, committed()), "result", "INCONCLUSIVE");
    edit(report("04-violation.json", 4, committed()), "result", "VIOLATION");
    edit(report("05-old-checker.json", 5, committed()), "checker_version", 1);
    Path noVersion = report("06-no-version.json", 6, committed());
    Map<String, Object> root = JSON.readValue(noVersion.toFile(), Map.class);
    root.remove("checker_version");
    JSON.writeValue(noVersion.toFile(), root);
    RunRecord dirty =
        new RunRecord(
            List.of(), "kafka", "idempotent", "inbox", "8d9a95f", true, Map.of("cores", 2));
    report("07-dirty.json", 7, dirty);
    report("08-no-commit.json", 8, committed());
    edit(dir.resolve("runs/08-no-commit.json"), "commit", "unknown");
    edit(report("09-no-faults.json", 9, committed()), "faults", List.of());
    Files.writeString(dir.resolve("runs/10-broken.json"), "{ not json");
    edit(report("12-total-disagrees.json", 12, committed()), "injections", 5);
    RunRecord rabbit =
        new RunRecord(List.of(), "rabbitmq", "cdc", "inbox", "8d9a95f", false, Map.of());
    report("11-rabbit.json", 11, rabbit);

    Ledger.Count c = Ledger.count(dir.resolve("runs"));

    assertThat(c.entries()).hasSize(12);
    assertThat(c.entries())
        .filteredOn(Ledger.Entry::counted)
        .extracting(Ledger.Entry::file)
        .containsExactly("01-ok.json", "11-rabbit.json");
    assertThat(c.injections()).as("3 fired faults in each counted run's list").isEqualTo(6);
    assertThat(c.byMode())
        .containsExactly(
            Map.entry("kafka/idempotent/inbox", 3L), Map.entry("rabbitmq/cdc/inbox", 3L));
    Map<String, String> why = new java.util.TreeMap<>();
    c.entries().forEach(e -> why.put(e.file(), e.why()));
    assertThat(why.get("02-copy-of-ok.json")).contains("same run");
    assertThat(why.get("03-inconclusive.json")).contains("INCONCLUSIVE");
    assertThat(why.get("04-violation.json")).contains("VIOLATION");
    assertThat(why.get("05-old-checker.json")).contains("checker version 1");
    assertThat(why.get("06-no-version.json")).contains("checker version 1");
    assertThat(why.get("07-dirty.json")).contains("uncommitted");
    assertThat(why.get("08-no-commit.json")).contains("no commit");
    assertThat(why.get("09-no-faults.json")).contains("no fault fired");
    assertThat(why.get("10-broken.json")).contains("not a JSON report");
    assertThat(why.get("12-total-disagrees.json"))
        .contains("shows 3 faults fired, its total says 5");

    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    Ledger.print(c, dir.resolve("runs"), new PrintStream(buffer, true, StandardCharsets.UTF_8));
    assertThat(buffer.toString(StandardCharsets.UTF_8))
        .contains("counted runs: 2 of 12; injected faults that fired: 6");
  }

  @Test
  void runsOnAClusterAreCountedUnderTheirOwnMode() throws Exception {
    RunRecord single = committed();
    RunRecord onCluster =
        new RunRecord(
            List.of("--cluster", "--seed", "2"),
            "kafka",
            "idempotent",
            "inbox",
            "8d9a95f0000000000000000000000000000000aa",
            false,
            Map.of("cores", 2),
            true);
    report("01-single.json", 1, single);
    Path cluster = report("02-cluster.json", 2, onCluster);
    // a report written before the key: its command says --cluster
    Path older =
        report(
            "03-rabbit-cluster-before-the-key.json",
            3,
            new RunRecord(
                List.of("--transport", "rabbitmq", "--cluster"),
                "rabbitmq",
                "idempotent",
                "inbox",
                "8d9a95f0000000000000000000000000000000aa",
                false,
                Map.of()));
    Map<String, Object> root = JSON.readValue(older.toFile(), Map.class);
    root.remove("cluster");
    JSON.writeValue(older.toFile(), root);

    assertThat(JSON.readTree(cluster.toFile()).path("cluster").asBoolean()).isTrue();
    assertThat(
            JSON.readTree(dir.resolve("runs/01-single.json").toFile()).path("cluster").isBoolean())
        .isTrue();
    Ledger.Count c = Ledger.count(dir.resolve("runs"));
    assertThat(c.runs()).isEqualTo(3);
    assertThat(c.byMode())
        .containsExactly(
            Map.entry("kafka/idempotent/inbox", 3L),
            Map.entry("kafka/idempotent/inbox/cluster", 3L),
            Map.entry("rabbitmq/idempotent/inbox/cluster", 3L));
  }

  @Test
  void theSubcommandRecountsAndFailsWithoutAFolder() throws Exception {
    report("01-ok.json", 1, committed());
    Path json = dir.resolve("ledger.json");
    int code =
        new CommandLine(new VerifyCli())
            .execute("ledger", "--runs", dir.resolve("runs").toString(), "--json", json.toString());
    assertThat(code).isZero();
    assertThat(JSON.readTree(json.toFile()).path("injections").asLong()).isEqualTo(3);
    assertThat(
            new CommandLine(new VerifyCli())
                .execute("ledger", "--runs", dir.resolve("nothing-here").toString()))
        .isEqualTo(2);
  }
}
