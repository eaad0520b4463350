package dev.postbox.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The seed's whole dead-letter procedure from the command line, on PostgreSQL and a Kafka broker:
 * messages fail in a consumer; the operator lists the groups and the letters, shows one, fixes the
 * cause (a deployed fix for one, a corrected copy for the other), replays, sees them applied in the
 * trace, and reads the audit. Then the exit codes and the --json shapes.
 */
@PostboxTest
class DeadLetterProcedureIT {

  private static final ObjectMapper JSON = new ObjectMapper();

  static final class WarehouseMissing extends PermanentMessageException {
    WarehouseMissing(String m) {
      super(m);
    }
  }

  private record Run(int code, String out, String err) {
    JsonNode json() throws Exception {
      return JSON.readTree(out);
    }
  }

  /** Runs the command line as the launcher does; captures System.out and System.err. */
  private static synchronized Run run(String... args) {
    PrintStream out = System.out;
    PrintStream err = System.err;
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    try (PrintStream po = new PrintStream(o, true, StandardCharsets.UTF_8);
        PrintStream pe = new PrintStream(e, true, StandardCharsets.UTF_8)) {
      System.setOut(po);
      System.setErr(pe);
      int code = OperatorCli.commandLine().execute(args);
      return new Run(code, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(out);
      System.setErr(err);
    }
  }

  private static String[] with(String url, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.add("--pg-url");
    all.add(url);
    return all.toArray(String[]::new);
  }

  @Test
  void listShowFixReplayAppliedAudit(PostboxTestContext ctx) throws Exception {
    String url = ctx.jdbcUrl();
    assertThat(run("migrate", "--jdbc-url", url).code()).isZero();
    DataSource ds = ctx.dataSource();
    try (Connection c = ds.getConnection()) {
      c.createStatement().execute("CREATE TABLE shipped (message_id uuid PRIMARY KEY, sku text)");
    }
    String topic = ctx.topic("orders", 1);
    AtomicBoolean warehouseDeployed = new AtomicBoolean();
    Subscription sub =
        Subscription.builder("shipping")
            .topics(topic)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .build();
    KafkaSubscriber consumer =
        KafkaSubscriber.builder(ctx.bootstrapServers(), sub)
            .inbox(PostgresInboxStore.create(ds))
            .deadLetters(PostgresDeadLetterStore.create(ds))
            .handler(d -> {
              JsonNode order = JSON.readTree(d.message().payload().bytes());
              if (!order.hasNonNull("sku")) {
                throw new WarehouseMissing("order without sku");
              }
              if (order.get("sku").asText().startsWith("W") && !warehouseDeployed.get()) {
                throw new WarehouseMissing("no warehouse for " + order.get("sku").asText());
              }
              try (PreparedStatement ps =
                  d.connection()
                      .orElseThrow()
                      .prepareStatement("INSERT INTO shipped VALUES (?, ?)")) {
                ps.setObject(1, d.message().id());
                ps.setString(2, order.get("sku").asText());
                ps.executeUpdate();
              }
            })
            .build();
    Message noSku = Message.builder(topic, "order.placed").key("o-1").jsonPayload("{}").build();
    Message noWarehouse =
        Message.builder(topic, "order.placed").key("o-2").jsonPayload("{\"sku\":\"W-9\"}").build();
    try (Relay relay =
        Relay.builder(
                PostgresRelayStore.create(ds),
                KafkaRelayPublisher.builder(ctx.bootstrapServers()).build())
            .pollInterval(Duration.ofMillis(200))
            .build()) {
      consumer.start();
      relay.start();
      Outbox.postgres()
          .inTransaction(
              ds,
              tx -> {
                tx.write(noSku);
                tx.write(noWarehouse);
                return null;
              });
      await().atMost(Duration.ofSeconds(90)).until(() -> consumer.stats().deadLettered() == 2);

      // 1. what is failing: groups, then the letters of the consumer
      Run groups = run(with(url, "dlq", "groups", "--json"));
      assertThat(groups.code()).as(groups.err()).isZero();
      assertThat(groups.json().get("items")).hasSize(2);
      for (String key :
          List.of(
              "fingerprint",
              "count",
              "pending",
              "first_seen",
              "last_seen",
              "consumers",
              "error_class",
              "topic",
              "sample_error",
              "sample_id")) {
        assertThat(groups.json().get("items").get(0).has(key)).as(key).isTrue();
      }
      assertThat(groups.json().has("next")).isTrue();
      Run list = run(with(url, "dlq", "list", "--consumer", "shipping", "--json"));
      assertThat(list.code()).isZero();
      long skuLetter = -1;
      long warehouseLetter = -1;
      String warehouseGroup = null;
      for (JsonNode item : list.json().get("items")) {
        if (item.get("message_id").asText().equals(noSku.id().toString())) {
          skuLetter = item.get("id").asLong();
        } else {
          warehouseLetter = item.get("id").asLong();
          warehouseGroup = item.get("fingerprint").asText();
        }
        assertThat(item.get("status").asText()).isEqualTo("PENDING");
        assertThat(item.get("key").asText()).startsWith("o-");
      }
      assertThat(run(with(url, "dlq", "list")).out()).contains("WarehouseMissing");
      Run byMessage =
          run(with(url, "dlq", "list", "--message-id", noSku.id().toString(), "--json"));
      assertThat(byMessage.json().get("items")).hasSize(1);
      assertThat(byMessage.json().get("items").get(0).get("id").asLong()).isEqualTo(skuLetter);

      // 2. inspect one
      Run show = run(with(url, "dlq", "show", Long.toString(skuLetter)));
      assertThat(show.code()).isZero();
      assertThat(show.out())
          .contains("order without sku", "ce_id", "payload", "{}", "stack trace", "trace");
      Run showJson = run(with(url, "dlq", "show", Long.toString(skuLetter), "--json"));
      for (String key :
          List.of(
              "summary",
              "headers",
              "payload",
              "payload_text",
              "stack_trace",
              "history",
              "audit",
              "trace")) {
        assertThat(showJson.json().has(key)).as(key).isTrue();
      }

      // 3. fix: a corrected copy of one, a deployed fix for the other's group; then replay
      Run edit =
          run(
              with(
                  url,
                  "dlq",
                  "edit",
                  Long.toString(skuLetter),
                  "--payload",
                  "{\"sku\":\"A-1\"}",
                  "--reason",
                  "sku was missing",
                  "--yes",
                  "--actor",
                  "alice"));
      assertThat(edit.code()).as(edit.err()).isZero();
      UUID copy = UUID.fromString(edit.out().lines().reduce((a, b) -> b).orElseThrow().trim());
      warehouseDeployed.set(true);
      Run replay =
          run(with(url, "dlq", "replay", "--group", warehouseGroup, "--yes", "--actor", "bob"));
      assertThat(replay.code()).as(replay.out() + replay.err()).isZero();
      assertThat(replay.out()).contains("replayed 1, skipped 0, failed 0");

      // 4. applied: both effects, and the traces say processed
      await().atMost(Duration.ofSeconds(90)).until(() -> shipped(ds) == 2);
      for (UUID id : List.of(copy, noWarehouse.id())) {
        Run trace = run("trace", id.toString(), "--pg-url", url, "--json");
        assertThat(trace.code()).isZero();
        assertThat(trace.json().get("steps").findValuesAsText("step")).contains("processed");
      }

      // 5. the audit: who did what
      Run audit = run(with(url, "dlq", "audit", "--json"));
      assertThat(audit.code()).isZero();
      JsonNode items = audit.json().get("items");
      assertThat(items).hasSize(2);
      assertThat(items.get(0).get("actor").asText()).isEqualTo("bob");
      assertThat(items.get(0).get("action").asText()).isEqualTo("REPLAY");
      assertThat(items.get(0).get("dead_letter_id").asLong()).isEqualTo(warehouseLetter);
      assertThat(items.get(1).get("actor").asText()).isEqualTo("alice");
      assertThat(items.get(1).get("action").asText()).isEqualTo("EDIT");
      assertThat(items.get(1).get("new_message_id").asText()).isEqualTo(copy.toString());
      assertThat(items.get(1).get("reason").asText()).isEqualTo("sku was missing");

      // exit codes
      assertThat(run(with(url, "dlq", "show", "999999")).code()).isEqualTo(ExitCodes.NOT_FOUND);
      assertThat(run(with(url, "dlq", "replay", Long.toString(warehouseLetter), "--yes")).code())
          .as("already replayed")
          .isEqualTo(ExitCodes.CONFLICT);
      assertThat(run(with(url, "dlq", "discard", Long.toString(skuLetter), "--reason", "x")).code())
          .as("no --yes and no terminal")
          .isEqualTo(ExitCodes.NOT_CONFIRMED);
      assertThat(
              run(with(url, "dlq", "discard", Long.toString(skuLetter), "--reason", "x", "--yes"))
                  .code())
          .as("edited letters are discarded already")
          .isEqualTo(ExitCodes.CONFLICT);
      assertThat(run(with(url, "dlq", "list", "--status", "nope")).code())
          .isEqualTo(ExitCodes.USAGE);
      assertThat(run(with(url, "dlq", "list", "--consumer", "nobody")).code())
          .isEqualTo(ExitCodes.NOT_FOUND);
      assertThat(run(with(url, "parked", "release", "shipping", "o-9", "--yes")).code())
          .isEqualTo(ExitCodes.NOT_FOUND);
      assertThat(run(with(url, "outbox", "unblock", "1", "--retry", "--yes")).code())
          .isEqualTo(ExitCodes.NOT_FOUND);
      assertThat(run("dlq", "list", "--pg-url", "jdbc:postgresql://127.0.0.1:1/none").code())
          .isEqualTo(ExitCodes.DATABASE);

      // the other read commands' --json shapes
      JsonNode status = run(with(url, "outbox", "status", "--json")).json();
      assertThat(status.has("outbox_pending")).isTrue();
      assertThat(status.has("outbox_oldest_pending_age")).isTrue();
      JsonNode relays = run(with(url, "relay", "status", "--json")).json();
      assertThat(relays.get("lanes")).hasSize(64);
      assertThat(relays.get("instances")).isNotEmpty();
      JsonNode lag =
          run(with(
                  url,
                  "lag",
                  "--json",
                  "--bootstrap-servers",
                  ctx.bootstrapServers(),
                  "--group",
                  "shipping"))
              .json();
      assertThat(lag.get("partitions")).isNotEmpty();
      assertThat(lag.get("partitions").get(0).has("oldest_unprocessed_age")).isTrue();
      assertThat(lag.has("consumers")).isTrue();
      assertThat(run(with(url, "parked", "list", "--json")).json().get("items")).isEmpty();
      assertThat(run(with(url, "outbox", "blocked", "--json")).json().has("blocked")).isTrue();
    } finally {
      consumer.close();
    }
  }

  private static int shipped(DataSource ds) throws Exception {
    try (Connection c = ds.getConnection();
        ResultSet rs = c.createStatement().executeQuery("SELECT count(*) FROM shipped")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
