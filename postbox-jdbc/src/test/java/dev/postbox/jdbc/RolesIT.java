package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.spi.ConsumerAgeStore;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The least-privilege roles of {@code db/postbox/roles/postgresql-roles.sql} on a real PostgreSQL:
 * each component runs under a login role that is a member of its group role and does its job, and
 * an access outside its job fails with {@code permission denied} (SQLSTATE 42501). Also checks that
 * the script names every {@code postbox_*} table the migrations create, so a new table cannot be
 * left out of it unnoticed.
 */
@PostboxTest
class RolesIT {

  static final String SCRIPT = "db/postbox/roles/postgresql-roles.sql";
  private static final String DENIED = "42501";

  @Test
  void eachComponentWorksUnderItsRoleAndIsDeniedWhatItDoesNotNeed(PostboxTestContext ctx)
      throws Exception {
    DataSource admin = ctx.dataSource();
    PostboxMigrations.migrate(admin);
    exec(admin, "CREATE TABLE orders (id text PRIMARY KEY, total int NOT NULL)");
    exec(admin, script());
    exec(admin, "GRANT SELECT, INSERT, UPDATE ON orders TO postbox_app, postbox_consumer");
    String s = "pbx_" + ctx.schema().substring(ctx.schema().length() - 8); // names <= 63 bytes
    DataSource owner = login(ctx, s + "_owner", "postbox_owner");
    DataSource app = login(ctx, s + "_app", "postbox_app");
    DataSource relay = login(ctx, s + "_relay", "postbox_relay");
    DataSource consumer = login(ctx, s + "_consumer", "postbox_consumer");
    DataSource operator = login(ctx, s + "_operator", "postbox_operator");

    // the migration owner: migrations validate and run, and it may alter the tables
    assertThat(PostboxMigrations.migrate(owner)).isZero();
    exec(owner, "COMMENT ON TABLE postbox_outbox IS 'owned by postbox_owner'");
    denied(app, "COMMENT ON TABLE postbox_outbox IS 'not the owner'");

    // the application writer: a business change and its outbox row in one transaction
    Message m = Message.builder("orders", "order.created").key("o-1").jsonPayload("{}").build();
    Outbox.postgres()
        .inTransaction(
            app,
            tx -> {
              try (PreparedStatement ps =
                  tx.connection().prepareStatement("INSERT INTO orders VALUES ('o-1', 10)")) {
                ps.executeUpdate();
              }
              tx.write(m);
              return null;
            });
    denied(app, "SELECT count(*) FROM postbox_outbox");
    denied(app, "SELECT count(*) FROM postbox_dead_letter");
    denied(app, "DELETE FROM postbox_inbox");

    // the relay publishes the row under its role, and reads no business table
    List<Message> published = new CopyOnWriteArrayList<>();
    RelayPublisher publisher =
        new RelayPublisher() {
          @Override
          public List<PublishOutcome> publish(List<Message> messages) {
            published.addAll(messages);
            List<PublishOutcome> out = new ArrayList<>();
            messages.forEach(x -> out.add(PublishOutcome.ACKNOWLEDGED));
            return out;
          }

          @Override
          public void close() {}
        };
    try (Relay r =
        Relay.builder(PostgresRelayStore.create(relay), publisher)
            .pollInterval(Duration.ofMillis(200))
            .build()) {
      r.start();
      await().atMost(Duration.ofSeconds(60)).until(() -> r.stats().published() == 1);
    }
    assertThat(published).extracting(Message::id).containsExactly(m.id());
    denied(relay, "SELECT * FROM orders");
    denied(relay, "SELECT count(*) FROM postbox_inbox");
    denied(relay, "SELECT count(*) FROM postbox_dead_letter");
    denied(relay, "INSERT INTO postbox_outbox (message_id) VALUES (gen_random_uuid())");

    // the consumer: the effect with its inbox row, a dead letter written; it cannot read letters
    InboxStore inbox = PostgresInboxStore.create(consumer);
    UUID id = UUID.randomUUID();
    assertThat(
            inbox.processOnce(
                "billing",
                id,
                new byte[32],
                c -> {
                  try (Statement st = c.createStatement()) {
                    st.executeUpdate("UPDATE orders SET total = 11 WHERE id = 'o-1'");
                  }
                }))
        .isEqualTo(InboxStore.Outcome.APPLIED);
    DeadLetterStore consumerLetters = PostgresDeadLetterStore.create(consumer);
    long letter =
        consumerLetters.add(
            DeadLetterTestData.letter("billing", "orders", "o-1", "fp", Instant.now()));
    assertThatThrownBy(() -> consumerLetters.query(DeadLetterStore.Query.all(10)))
        .hasRootCauseInstanceOf(SQLException.class)
        .rootCause()
        .extracting(e -> ((SQLException) e).getSQLState())
        .isEqualTo(DENIED);
    denied(consumer, "SELECT value FROM postbox_dead_letter");
    denied(consumer, "SELECT count(*) FROM postbox_outbox");
    denied(consumer, "DELETE FROM postbox_relay_lane");
    // its instances share the subscription's shards
    ShardLeaseStore shards = PostgresShardLeaseStore.create(consumer);
    shards.heartbeat("billing", "i1", Duration.ofMinutes(1));
    assertThat(shards.acquire("billing", "i1", List.of(0, 1), Duration.ofMinutes(1)))
        .containsExactly(0, 1);
    shards.unregister("billing", "i1");
    // and report the oldest unfinished message of each queue they consume (V21)
    Instant t = Instant.parse("2026-01-01T00:00:00Z");
    ConsumerAgeStore consumerAges = PostgresConsumerAgeStore.create(consumer);
    consumerAges.report("billing", "i1", Map.of("billing.orders.0", Optional.of(t)), t);
    assertThat(consumerAges.read("billing", t, Duration.ofMinutes(1)))
        .isEqualTo(Map.of("billing.orders.0", Optional.of(t)));

    // the operator: reads, replays and discards dead letters; no business table, no inbox
    DeadLetterStore operatorLetters = PostgresDeadLetterStore.create(operator);
    assertThat(operatorLetters.query(DeadLetterStore.Query.all(10)))
        .extracting(DeadLetterStore.DeadLetter::id)
        .containsExactly(letter);
    Replayer replayer =
        Replayer.builder(
                operator,
                operatorLetters,
                d ->
                    Message.builder(d.letter().topic(), d.letter().type().orElseThrow())
                        .id(d.letter().messageId().orElseThrow())
                        .key("o-1")
                        .payload(new Payload(d.letter().value(), Payload.JSON))
                        .build())
            .by("alice")
            .build();
    replayer.replay(letter);
    assertThat(operatorLetters.find(letter).orElseThrow().status())
        .isEqualTo(DeadLetterStore.Status.REPLAYED);
    // its replay jobs (V20): created, claimed with SKIP LOCKED, advanced; never deleted
    exec(
        operator,
        "INSERT INTO postbox_replay_job (created_at, created_by, reason, selection, route, state,"
            + " total) VALUES (now(), 'alice', 'fixed', '{}', 'TARGETED', 'RUNNING', 1)");
    exec(
        operator,
        "INSERT INTO postbox_replay_job_letter (job_id, seq, dead_letter_id)"
            + " SELECT max(id), 1, "
            + letter
            + " FROM postbox_replay_job");
    exec(
        operator,
        "SELECT id FROM postbox_replay_job WHERE state = 'RUNNING' FOR UPDATE SKIP LOCKED");
    exec(operator, "UPDATE postbox_replay_job_letter SET outcome = 'REPLAYED', done_at = now()");
    exec(operator, "UPDATE postbox_replay_job SET state = 'DONE', replayed = 1");
    denied(operator, "DELETE FROM postbox_replay_job");
    // the consumers' ages: read (the command line's and the console's lag), never written
    assertThat(PostgresConsumerAgeStore.create(operator).read("billing", t, Duration.ofMinutes(1)))
        .containsOnlyKeys("billing.orders.0");
    denied(operator, "DELETE FROM postbox_consumer_age");
    denied(relay, "SELECT count(*) FROM postbox_consumer_age");
    denied(consumer, "SELECT count(*) FROM postbox_replay_job");
    denied(operator, "SELECT * FROM orders");
    denied(operator, "SELECT count(*) FROM postbox_inbox");
    denied(operator, "UPDATE postbox_relay_lane SET epoch = epoch");
  }

  @Test
  void theScriptNamesEveryPostboxTable(PostboxTestContext ctx) throws Exception {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    Set<String> tables = new TreeSet<>();
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                    + " AND tablename LIKE 'postbox\\_%'")) {
      while (rs.next()) {
        tables.add(rs.getString(1));
      }
    }
    String script = script();
    assertThat(tables)
        .as("tables the migrations create and " + SCRIPT + " does not mention: add their grants")
        .allMatch(t -> script.matches("(?s).*\\b" + t + "\\b.*"));
  }

  private static String script() throws IOException {
    try (InputStream in = RolesIT.class.getClassLoader().getResourceAsStream(SCRIPT)) {
      assertThat(in).as(SCRIPT).isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /** A new login role, member of {@code group}, and a data source on the test's schema. */
  private static DataSource login(PostboxTestContext ctx, String user, String group)
      throws SQLException {
    exec(
        ctx.dataSource(),
        "CREATE ROLE " + user + " LOGIN PASSWORD 'pw-" + user + "' IN ROLE " + group);
    PGSimpleDataSource ds = new PGSimpleDataSource();
    ds.setURL(ctx.jdbcUrl());
    ds.setUser(user);
    ds.setPassword("pw-" + user);
    return ds;
  }

  private static void exec(DataSource ds, String sql) throws SQLException {
    try (Connection c = ds.getConnection();
        Statement st = c.createStatement()) {
      st.execute(sql);
    }
  }

  private static void denied(DataSource ds, String sql) {
    assertThatThrownBy(() -> exec(ds, sql))
        .as(sql)
        .isInstanceOf(SQLException.class)
        .extracting(e -> ((SQLException) e).getSQLState())
        .isEqualTo(DENIED);
  }
}
