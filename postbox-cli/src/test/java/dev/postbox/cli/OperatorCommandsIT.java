package dev.postbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.core.Message;
import dev.postbox.jdbc.Outbox;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code migrate} and {@code trace} against an embedded PostgreSQL: the tables are created, a
 * message written to the outbox is traced, as text and as JSON (keys {@code message_id}, {@code
 * steps}, {@code notes}), and an unknown id exits with 4.
 */
@PostboxTest
class OperatorCommandsIT {

  private record Run(int code, String out) {}

  /** Runs the command line; the commands print their results on {@code System.out}. */
  private static synchronized Run run(String... args) {
    PrintStream saved = System.out;
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (PrintStream capture = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
      System.setOut(capture);
      int code = new CommandLine(new OperatorCli()).execute(args);
      return new Run(code, bytes.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(saved);
    }
  }

  @Test
  void migrateThenTraceAMessage(PostboxTestContext ctx) throws Exception {
    Run migrate = run("migrate", "--jdbc-url", ctx.jdbcUrl());
    assertThat(migrate.code()).as(migrate.out()).isZero();
    assertThat(migrate.out()).matches("(?s)applied [1-9][0-9]* migration\\(s\\)\\s*");
    assertThat(run("migrate", "--jdbc-url", ctx.jdbcUrl()).out())
        .as("a second run has nothing to do")
        .contains("applied 0 migration(s)");

    Message m = Message.builder("orders", "order.created").key("o-1").jsonPayload("{}").build();
    Outbox.postgres()
        .inTransaction(
            ctx.dataSource(),
            tx -> {
              tx.write(m);
              return null;
            });

    Run text = run("trace", m.id().toString(), "--pg-url", ctx.jdbcUrl());
    assertThat(text.code()).as(text.out()).isZero();
    assertThat(text.out()).startsWith("message " + m.id()).contains("written", "pending");

    Run json =
        run(
            "trace",
            m.id().toString(),
            "--pg-url",
            ctx.jdbcUrl(),
            "--schema",
            ctx.schema(),
            "--json");
    assertThat(json.code()).as(json.out()).isZero();
    JsonNode node = new ObjectMapper().readTree(json.out());
    assertThat(node.get("message_id").asText()).isEqualTo(m.id().toString());
    assertThat(node.has("notes")).isTrue();
    JsonNode written = node.get("steps").get(1);
    assertThat(written.get("step").asText()).isEqualTo("written");
    for (String key : new String[] {"at", "step", "by", "detail", "attributes"}) {
      assertThat(written.has(key)).as(key).isTrue();
    }
    assertThat(written.get("attributes").get("key").asText()).isEqualTo("o-1");

    Run unknown = run("trace", UUID.randomUUID().toString(), "--pg-url", ctx.jdbcUrl());
    assertThat(unknown.code()).isEqualTo(4);
    assertThat(unknown.out()).contains("no postbox table knows this message");
  }
}
