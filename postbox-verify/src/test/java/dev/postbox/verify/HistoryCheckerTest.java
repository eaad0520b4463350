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

/**
 * The checker's verdicts (no infrastructure): a dead letter is a violation, and a scenario whose
 * offset audit never sampled or never checked a record, or a parking scenario in which nothing was
 * parked, is inconclusive (exit code 3), never a pass.
 */
class HistoryCheckerTest {

  /** A clean check: 100 messages, every record audited, nothing wrong. */
  private static Findings clean() {
    return findings(0, 12, 100, 0, 0);
  }

  private static Findings findings(
      long deadLettered,
      long offsetSamples,
      long offsetRecordsChecked,
      long failures,
      long parked) {
    return Findings.builder()
        .messages(100)
        .rolledBack(3)
        .deadLettered(deadLettered)
        .topicRecords(104)
        .topicDuplicates(4)
        .staleRepublishes(1)
        .offsetSamples(offsetSamples)
        .offsetRecordsChecked(offsetRecordsChecked)
        .offsetAuditFailures(failures)
        .parked(parked)
        .unparked(parked)
        .build();
  }

  private static ScenarioResult result(String name, Findings f, boolean parking) {
    return new ScenarioResult(
        name,
        1,
        5,
        Map.of("kill-9", 5),
        Map.of(),
        f,
        900,
        false,
        0,
        f.inconclusiveReasons(parking));
  }

  @Test
  void aDeadLetterIsAViolation() {
    assertThat(clean().violations()).isZero();
    Findings f = findings(1, 12, 100, 0, 0);
    assertThat(f.violations()).isEqualTo(1);
    assertThat(f.lost()).isZero(); // not lost, and still not a pass
    Report report = report(result("kill-9", f, false));
    assertThat(report.exitCode()).isEqualTo(Report.VIOLATION);
    assertThat(report.result()).isEqualTo("VIOLATION");
  }

  @Test
  void noOffsetSampleIsInconclusiveAndSaysWhy() {
    Findings f = findings(0, 0, 0, 7, 0);
    assertThat(f.violations()).isZero();
    assertThat(f.inconclusiveReasons(false))
        .singleElement()
        .asString()
        .contains("offset audit took no sample")
        .contains("7 attempts failed");
    Report report = report(result("pauses", f, false));
    assertThat(report.exitCode()).isEqualTo(Report.INCONCLUSIVE).isEqualTo(3);
    assertThat(report.result()).isEqualTo("INCONCLUSIVE");
    assertThat(text(report)).contains("INCONCLUSIVE: [the offset audit took no sample");
  }

  @Test
  void noAuditedRecordIsInconclusive() {
    Findings f = findings(0, 12, 0, 0, 0);
    assertThat(f.inconclusiveReasons(false))
        .singleElement()
        .asString()
        .contains("offset audit checked no record");
    assertThat(report(result("pauses", f, false)).exitCode()).isEqualTo(Report.INCONCLUSIVE);
  }

  @Test
  void aParkingScenarioThatParkedNothingIsInconclusive() {
    assertThat(clean().inconclusiveReasons(false)).isEmpty();
    assertThat(clean().inconclusiveReasons(true))
        .singleElement()
        .asString()
        .contains("nothing was parked");
    assertThat(findings(0, 12, 100, 0, 9).inconclusiveReasons(true)).isEmpty();
    assertThat(report(result("parking", findings(0, 12, 100, 0, 9), true)).exitCode())
        .isEqualTo(Report.OK);
  }

  @Test
  void roundsAddUp() {
    Findings sum = findings(1, 2, 3, 4, 5).plus(findings(10, 20, 30, 40, 50));
    assertThat(sum)
        .extracting(
            Findings::deadLettered,
            Findings::offsetSamples,
            Findings::offsetRecordsChecked,
            Findings::offsetAuditFailures,
            Findings::parked,
            Findings::unparked)
        .containsExactly(11L, 22L, 33L, 44L, 55L, 55L);
  }

  @Test
  void theReportShowsDeadLettersParkingAndAuditFailures(@TempDir Path dir) throws Exception {
    Report report = report(result("parking", findings(2, 12, 100, 3, 9), true));
    String text = text(report);
    String header = text.lines().filter(l -> l.startsWith("scenario")).findFirst().orElseThrow();
    assertThat(header.split("\\s+")).contains("lost", "dlq", "parked", "unpark");
    String row = text.lines().filter(l -> l.startsWith("parking")).findFirst().orElseThrow();
    // scenario rounds messages lost dlq ...
    assertThat(row.split("\\s+")[4]).isEqualTo("2");

    Path file = dir.resolve("report.json");
    report.writeJson(file);
    JsonNode s = new ObjectMapper().readTree(Files.readString(file)).get("scenarios").get(0);
    assertThat(s.get("dead_lettered").asLong()).isEqualTo(2);
    assertThat(s.get("parked").asLong()).isEqualTo(9);
    assertThat(s.get("unparked").asLong()).isEqualTo(9);
    assertThat(s.get("offset_audit_failures").asLong()).isEqualTo(3);
    // one server: commits PostgreSQL lost were not looked for, and the report says so
    assertThat(s.get("lost_by_postgres_judged").asText()).isEqualTo("not_checked");
    assertThat(row.split("\\s+")[16]).isEqualTo("-");
    assertThat(s.get("ok").asBoolean()).isFalse();
  }

  @Test
  void theDatabaseScenariosCrashPostgresAndOneParks() {
    Map<String, Scenario> byName =
        Scenario.all().stream().collect(java.util.stream.Collectors.toMap(Scenario::name, s -> s));
    assertThat(byName.get("postgres-restart").external())
        .contains(Scenario.Fault.POSTGRES_RESTART, Scenario.Fault.POSTGRES_CRASH);
    Scenario parking = byName.get("parking");
    assertThat(parking.parking()).isTrue();
    assertThat(parking.external())
        .contains(
            Scenario.Fault.POSTGRES_RESTART,
            Scenario.Fault.POSTGRES_CRASH,
            Scenario.Fault.POSTGRES_TERMINATE);
    assertThat(byName.get("mixed").external()).contains(Scenario.Fault.POSTGRES_CRASH);
    assertThat(Scenario.all().stream().filter(Scenario::parking).map(Scenario::name))
        .containsExactly("parking");
  }

  @Test
  void onRabbitMqTheOffsetAndZombieColumnsSayNotCheckedInsteadOfZero(@TempDir Path dir)
      throws Exception {
    Report kafka = report(result("kill-9", clean(), false));
    Report rabbit =
        kafka.withRecord(
            RunRecord.of(
                List.of("--transport", "rabbitmq"), "rabbitmq", "idempotent", "inbox", false),
            dir.resolve("faults.log"));
    assertThat(text(kafka)).doesNotContain("n/a");
    assertThat(text(rabbit)).contains("n/a").contains("on RabbitMQ, offset and zombie are n/a");
    rabbit.writeJson(dir.resolve("r.json"));
    JsonNode json = new ObjectMapper().readTree(dir.resolve("r.json").toFile());
    assertThat(json.path("not_checked").has("zombie")).isTrue();
    assertThat(json.path("not_checked").has("offset")).isTrue();
    assertThat(json.path("result").asText()).isEqualTo("OK");
  }

  private static Report report(ScenarioResult... results) {
    return new Report(42, List.of(results), Instant.EPOCH, Duration.ofSeconds(60));
  }

  private static String text(Report report) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    report.printText(new PrintStream(b, true, StandardCharsets.UTF_8));
    return b.toString(StandardCharsets.UTF_8);
  }
}
