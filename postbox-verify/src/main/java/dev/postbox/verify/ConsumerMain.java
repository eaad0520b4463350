package dev.postbox.verify;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresOffsetStore;
import dev.postbox.jdbc.PostgresParkingStore;
import dev.postbox.kafka.KafkaSubscriber;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.apache.kafka.common.TopicPartition;

/**
 * A consumer of the campaign, as its own OS process: {@code EFFECTIVELY_ONCE}, per-key order; the
 * handler writes one row into {@code verify_effect} (no unique constraint on the message id, so a
 * second effect of a message stays visible) on the inbox transaction's connection, with this
 * incarnation's instance id and the record's partition and offset. Every assignment this instance
 * receives is recorded in {@code verify_assignment} (autocommit, with its generation) by {@link
 * RecordingAssignor}, before any record of it is handled.
 *
 * <p>With {@code parking} (the parking scenario): ordered parking on PostgreSQL with short delay
 * tiers, only {@value #PARKING_IN_PLACE_ATTEMPTS} in-place attempts before a key is parked, and a
 * handler that fails transiently for the {@linkplain #failsTransiently flaky keys} while {@code
 * verify_control.failing} is on (the harness switches it on and off during the phase, off at the
 * heal): keys are parked, their later records appended behind them, and unparked in order.
 *
 * <p>Arguments: JDBC URL, bootstrap servers, topic, group, instance id, session timeout ms,
 * idle-in-transaction timeout ms (0: none), optionally a static group member id (may be empty) and
 * optionally {@code parking} or {@code offsets} (the offsets-in-PostgreSQL mode: no inbox row, each
 * partition's next offset stored in the effect's transaction, partition order).
 */
public final class ConsumerMain {

  private static final ObjectMapper JSON = new ObjectMapper();

  static final int PARKING_IN_PLACE_ATTEMPTS = 3;

  /**
   * The parked retries' delays: short (a parked key is retried within seconds of the failures' end)
   * and many (about 2 minutes in all, so that nothing is dead-lettered while the database restarts
   * and crashes: a dead letter is a violation).
   */
  static final Duration[] PARKING_TIERS = parkingTiers();

  private static Duration[] parkingTiers() {
    List<Duration> t = new java.util.ArrayList<>();
    for (int i = 0; i < 10; i++) {
      t.add(Duration.ofSeconds(1));
    }
    for (int i = 0; i < 10; i++) {
      t.add(Duration.ofSeconds(2));
    }
    for (int i = 0; i < 20; i++) {
      t.add(Duration.ofSeconds(5));
    }
    return t.toArray(Duration[]::new);
  }

  /** The keys whose handler fails while the harness's switch is on: a quarter, two of them hot. */
  static boolean failsTransiently(String key) {
    return Integer.parseInt(key.substring(key.indexOf('-') + 1)) % 4 == 1;
  }

  /** The handler's injected failure: transient (retried, then parked). */
  static final class InjectedTransientFailure extends RuntimeException {
    InjectedTransientFailure(String key) {
      super("injected transient failure of key " + key, null, false, false);
    }
  }

  private ConsumerMain() {}

  public static void main(String[] args) throws Exception {
    String instance = args[4];
    int sessionMs = Integer.parseInt(args[5]);
    int idleTxMs = Integer.parseInt(args[6]);
    boolean parking = args.length > 8 && args[8].equals("parking");
    boolean offsets = args.length > 8 && args[8].equals("offsets");
    HikariDataSource ds =
        ChildSupport.dataSource(
            args[0],
            instance,
            12,
            idleTxMs > 0 ? "SET idle_in_transaction_session_timeout = " + idleTxMs : "");
    // on a PostgreSQL pair: the applied messages journaled once their transaction committed
    javax.sql.DataSource stores =
        args.length > 9 && !args[9].isEmpty()
            ? AppliedJournal.journaling(ds, CommitJournal.open(java.nio.file.Path.of(args[9])))
            : ds;
    RecordingAssignor.recorder(
        (partitions, generation) -> record(ds, instance, partitions, generation));
    Subscription subscription =
        Subscription.builder(args[3])
            .topics(args[2])
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            // the offsets mode applies a partition's records in offset order (per-key order with
            // it)
            .ordering(offsets ? Ordering.PARTITION : Ordering.KEY)
            .concurrency(8)
            .shutdownTimeout(Duration.ofSeconds(10))
            // transient failures (PostgreSQL restarts, terminated sessions, broker restarts) are
            // retried for minutes, never given up during the campaign
            .failureHandler(
                FailureHandlers.of(
                    parking
                        // a few quick attempts; then the key is parked (below)
                        ? RetryPolicy.builder()
                            .maxAttempts(PARKING_IN_PLACE_ATTEMPTS)
                            .backoff(
                                new Backoff(Duration.ofMillis(50), Duration.ofMillis(200), 2, 0.5))
                            .build()
                        : RetryPolicy.builder()
                            .maxAttempts(10_000)
                            .maxDuration(Duration.ofMinutes(10))
                            .backoff(
                                new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), 2, 0.5))
                            .build()))
            .build();
    KafkaSubscriber.Builder builder = KafkaSubscriber.builder(args[1], subscription);
    if (args.length > 7 && !args[7].isEmpty()) {
      // static membership: a restarted process takes its predecessor's partitions back at once
      builder.consumerProperty("group.instance.id", args[7]);
    }
    if (parking) {
      builder.parking(PostgresParkingStore.create(ds)).parkingTiers(PARKING_TIERS);
    }
    if (offsets) {
      builder.offsetStore(PostgresOffsetStore.create(stores));
    } else {
      builder.inbox(PostgresInboxStore.create(stores));
    }
    KafkaSubscriber subscriber =
        builder
            .deadLetters(PostgresDeadLetterStore.create(ds))
            .consumerProperty("session.timeout.ms", sessionMs)
            .consumerProperty("heartbeat.interval.ms", Math.max(500, sessionMs / 4))
            .consumerProperty("client.id", instance)
            .consumerProperty("partition.assignment.strategy", RecordingAssignor.class.getName())
            .handler(d -> {
              JsonNode body = JSON.readTree(d.message().payload().unsafeBytes());
              Connection c = d.connection().orElseThrow();
              String key = body.get("key").asText();
              if (parking && failsTransiently(key) && failing(c)) {
                throw new InjectedTransientFailure(key);
              }
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "INSERT INTO verify_effect (message_id, key, seq, instance, part, off)"
                          + " VALUES (?, ?, ?, ?, ?, ?)")) {
                ps.setObject(1, d.message().id());
                ps.setString(2, key);
                ps.setLong(3, body.get("seq").asLong());
                ps.setString(4, instance);
                ps.setInt(5, d.partition());
                ps.setLong(6, d.offset());
                ps.executeUpdate();
              }
              AppliedJournal.applied(c, body.path("phase").asInt(), d.message().id());
            })
            .build();
    subscriber.start();
    ConsumerStateFile.start(subscriber, instance);
    exitWhenDead(subscriber, instance);
    System.out.println("consumer " + instance + " started");
    ChildSupport.runUntilTerminated(() -> {
      subscriber.close();
      ds.close();
    });
  }

  /**
   * Exit code of a consumer whose subscriber failed for good (its state no longer alive): the
   * process exits, as an orchestrator's liveness check ({@code SubscriberState.healthy()}) would
   * replace it, and the harness counts an unexpected exit and starts it again. Without this a
   * process whose subscriber died would sit in the group's place, alive and consuming nothing.
   */
  static final int SUBSCRIBER_DEAD_EXIT = 70;

  private static void exitWhenDead(KafkaSubscriber subscriber, String instance) {
    Thread.ofPlatform()
        .daemon(true)
        .name("liveness")
        .start(() -> {
          // failed for good: running, the poll loop ended, and a failure says why (not a close)
          while (!subscriber.state().running()
              || subscriber.state().alive()
              || subscriber.state().failure().isEmpty()) {
            try {
              Thread.sleep(200);
            } catch (InterruptedException e) {
              return;
            }
          }
          System.out.println(
              "consumer "
                  + instance
                  + ": the subscriber failed for good ("
                  + subscriber.state().failure().orElseThrow()
                  + "); exiting to be replaced");
          System.exit(SUBSCRIBER_DEAD_EXIT);
        });
  }

  /** Whether the harness's switch of the transient failures is on. */
  private static boolean failing(Connection c) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("SELECT failing FROM verify_control");
        java.sql.ResultSet rs = ps.executeQuery()) {
      return rs.next() && rs.getBoolean(1);
    }
  }

  /**
   * Records an assignment (autocommit) on the poll thread, before any record of it is handled;
   * retries while PostgreSQL is away (the poll thread waits, as it would for a slow rebalance).
   */
  private static void record(
      DataSource ds, String instance, List<TopicPartition> partitions, int generation) {
    for (int attempt = 0; ; attempt++) {
      try (Connection c = ds.getConnection();
          PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO verify_assignment (instance, part, generation) VALUES (?, ?, ?)")) {
        for (TopicPartition tp : partitions) {
          ps.setString(1, instance);
          ps.setInt(2, tp.partition());
          ps.setInt(3, generation);
          ps.addBatch();
        }
        ps.executeBatch();
        return;
      } catch (SQLException e) {
        if (attempt > 300) {
          throw new IllegalStateException("cannot record assignment " + partitions, e);
        }
        try {
          Thread.sleep(100);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(ie);
        }
      }
    }
  }
}
