package dev.postbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.Test;

/**
 * {@code postbox dlq replay-job} against PostgreSQL: preview, start with the typed count (refused
 * without it or with another), status and list as JSON, pause/resume/cancel with their exit codes,
 * and {@code run} working the job to the end.
 */
@PostboxTest
class ReplayJobCommandsIT {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String GROUP = "com.shop.Boom|no warehouse|orders";

  private record Run(int code, String out, String err) {
    JsonNode json() throws Exception {
      return JSON.readTree(out);
    }
  }

  private static synchronized Run run(String url, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.add("--pg-url");
    all.add(url);
    PrintStream out = System.out;
    PrintStream err = System.err;
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    try (PrintStream po = new PrintStream(o, true, StandardCharsets.UTF_8);
        PrintStream pe = new PrintStream(e, true, StandardCharsets.UTF_8)) {
      System.setOut(po);
      System.setErr(pe);
      int code = OperatorCli.commandLine().execute(all.toArray(String[]::new));
      return new Run(code, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(out);
      System.setErr(err);
    }
  }

  private static void letters(DataSource ds, int n) {
    DeadLetterStore store = PostgresDeadLetterStore.create(ds);
    Instant t = Instant.parse("2026-12-05T09:00:00Z");
    for (int i = 0; i < n; i++) {
      Message m = Message.builder("orders", "order.placed").key("o-" + i).jsonPayload("{}").build();
      ProducerRecord<byte[], byte[]> r = KafkaRecords.toRecord(m);
      List<DeadLetterStore.Header> headers = new ArrayList<>();
      for (Header h : r.headers()) {
        headers.add(new DeadLetterStore.Header(h.key(), h.value()));
      }
      store.add(
          new NewDeadLetter(
              "shipping",
              "orders",
              0,
              i,
              Optional.of(m.id()),
              Optional.of(m.type()),
              r.key(),
              r.value(),
              headers,
              Classification.PERMANENT,
              "com.shop.Boom",
              "no warehouse",
              "com.shop.Boom: no warehouse",
              GROUP,
              3,
              t.plusSeconds(i),
              t.plusSeconds(i)));
    }
  }

  @Test
  void previewStartFollowPauseResumeRunAndCancel(PostboxTestContext ctx) throws Exception {
    String url = ctx.jdbcUrl();
    assertThat(OperatorCli.commandLine().execute("migrate", "--jdbc-url", url)).isZero();
    letters(ctx.dataSource(), 120);

    Run preview = run(url, "dlq", "replay-job", "preview", "--group", GROUP, "--json");
    assertThat(preview.code()).as(preview.err()).isZero();
    JsonNode p = preview.json();
    assertThat(p.get("count").asInt()).isEqualTo(120);
    assertThat(p.get("topics").get(0).asText()).isEqualTo("orders");
    assertThat(p.get("consumers").get(0).asText()).isEqualTo("shipping");
    assertThat(p.get("sample").size()).isEqualTo(5);
    assertThat(p.get("confirmation_needed").asBoolean()).isTrue();
    assertThat(p.get("oldest").asText()).isEqualTo("2026-12-05T09:00:00Z");
    assertThat(run(url, "dlq", "replay-job", "preview", "--consumer", "nobody").code())
        .isEqualTo(4);
    assertThat(run(url, "dlq", "replay-job", "preview").code()).as("no selection").isEqualTo(2);

    String[] start = {"dlq", "replay-job", "start", "--group", GROUP, "--actor", "alice"};
    Run unconfirmed = run(url, concat(start, "--reason", "warehouse fixed"));
    assertThat(unconfirmed.code()).isEqualTo(ExitCodes.NOT_CONFIRMED);
    assertThat(unconfirmed.err()).contains("--confirm 120");
    Run wrong = run(url, concat(start, "--reason", "warehouse fixed", "--confirm", "119"));
    assertThat(wrong.code()).isEqualTo(ExitCodes.USAGE);
    assertThat(wrong.err()).contains("covers 120 letters now, not 119");
    assertThat(run(url, concat(start, "--confirm", "120")).code())
        .as("--reason is required")
        .isEqualTo(ExitCodes.USAGE);

    Run started =
        run(url, concat(start, "--reason", "warehouse fixed", "--confirm", "120", "--json"));
    assertThat(started.code()).as(started.err()).isZero();
    JsonNode job = started.json();
    long id = job.get("id").asLong();
    assertThat(job.get("state").asText()).isEqualTo("RUNNING");
    assertThat(job.get("total").asInt()).isEqualTo(120);
    assertThat(job.get("created_by").asText()).isEqualTo("alice");
    for (String key :
        List.of("replayed", "skipped", "failed", "processed", "reason", "selection", "route")) {
      assertThat(job.has(key)).as(key).isTrue();
    }

    String jobId = Long.toString(id);
    assertThat(run(url, "dlq", "replay-job", "pause", jobId, "--actor", "bob").code()).isZero();
    assertThat(run(url, "dlq", "replay-job", "pause", jobId).code()).isEqualTo(ExitCodes.CONFLICT);
    Run paused = run(url, "dlq", "replay-job", "status", jobId, "--json");
    assertThat(paused.json().get("state").asText()).isEqualTo("PAUSED");
    assertThat(paused.json().get("changed_by").asText()).isEqualTo("bob");
    assertThat(run(url, "dlq", "replay-job", "resume", jobId).code()).isZero();

    Run worked = run(url, "dlq", "replay-job", "run", jobId, "--rate", "10000");
    assertThat(worked.code()).as(worked.err()).isZero();
    assertThat(worked.out())
        .contains("replay job " + id + ": DONE, 120 of 120 (100%): 120 replayed");
    assertThat(run(url, "dlq", "replay-job", "cancel", jobId).code()).isEqualTo(ExitCodes.CONFLICT);
    assertThat(run(url, "dlq", "replay-job", "status", "999").code())
        .isEqualTo(ExitCodes.NOT_FOUND);

    Run list = run(url, "dlq", "replay-job", "list", "--json");
    assertThat(list.json().get("items").get(0).get("id").asLong()).isEqualTo(id);
    Run audit = run(url, "dlq", "audit", "--json", "--limit", "200");
    assertThat(audit.code()).as(audit.err()).isZero();
    int jobs = 0;
    int replays = 0;
    for (JsonNode a : audit.json().get("items")) {
      jobs += a.get("action").asText().equals("REPLAY_JOB") ? 1 : 0;
      replays += a.get("action").asText().equals("REPLAY") ? 1 : 0;
    }
    assertThat(jobs).isEqualTo(1);
    assertThat(replays).isEqualTo(120);
  }

  private static String[] concat(String[] a, String... b) {
    List<String> all = new ArrayList<>(List.of(a));
    all.addAll(List.of(b));
    return all.toArray(String[]::new);
  }
}
