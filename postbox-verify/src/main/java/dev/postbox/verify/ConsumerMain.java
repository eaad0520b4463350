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
import dev.postbox.kafka.KafkaSubscriber;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.apache.kafka.common.TopicPartition;

/**
 * A consumer of the campaign, as its own OS process: {@code EFFECTIVELY_ONCE}, per-key order; the
 * handler writes one row into {@code verify_effect} (no unique constraint on the message id, so a
 * second effect of a message stays visible) on the inbox transaction's connection, with this
 * incarnation's instance id and the record's partition and offset. Every partition this instance is
 * assigned is recorded in {@code verify_assignment} (autocommit) before the first effect it applies
 * on it, and by a watcher as soon as the assignment is seen.
 *
 * <p>Arguments: JDBC URL, bootstrap servers, topic, group, instance id, session timeout ms,
 * idle-in-transaction timeout ms (0: none), and optionally a static group member id.
 */
public final class ConsumerMain {

  private static final ObjectMapper JSON = new ObjectMapper();

  private ConsumerMain() {}

  public static void main(String[] args) throws Exception {
    String instance = args[4];
    int sessionMs = Integer.parseInt(args[5]);
    int idleTxMs = Integer.parseInt(args[6]);
    HikariDataSource ds =
        ChildSupport.dataSource(
            args[0],
            instance,
            12,
            idleTxMs > 0 ? "SET idle_in_transaction_session_timeout = " + idleTxMs : "");
    Assignments assignments = new Assignments(ds, instance);
    Subscription subscription =
        Subscription.builder(args[3])
            .topics(args[2])
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .ordering(Ordering.KEY)
            .concurrency(8)
            .shutdownTimeout(Duration.ofSeconds(10))
            // transient failures (PostgreSQL restarts, terminated sessions, broker restarts) are
            // retried for minutes, never given up during the campaign
            .failureHandler(
                FailureHandlers.of(
                    RetryPolicy.builder()
                        .maxAttempts(10_000)
                        .maxDuration(Duration.ofMinutes(10))
                        .backoff(new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), 2, 0.5))
                        .build()))
            .build();
    KafkaSubscriber.Builder builder = KafkaSubscriber.builder(args[1], subscription);
    if (args.length > 7 && !args[7].isEmpty()) {
      // static membership: a restarted process takes its predecessor's partitions back at once
      builder.consumerProperty("group.instance.id", args[7]);
    }
    KafkaSubscriber subscriber =
        builder
            .inbox(PostgresInboxStore.create(ds))
            .deadLetters(PostgresDeadLetterStore.create(ds))
            .consumerProperty("session.timeout.ms", sessionMs)
            .consumerProperty("heartbeat.interval.ms", Math.max(500, sessionMs / 4))
            .consumerProperty("client.id", instance)
            .handler(d -> {
              assignments.recorded(d.partition());
              JsonNode body = JSON.readTree(d.message().payload().unsafeBytes());
              Connection c = d.connection().orElseThrow();
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "INSERT INTO verify_effect (message_id, key, seq, instance, part, off)"
                          + " VALUES (?, ?, ?, ?, ?, ?)")) {
                ps.setObject(1, d.message().id());
                ps.setString(2, body.get("key").asText());
                ps.setLong(3, body.get("seq").asLong());
                ps.setString(4, instance);
                ps.setInt(5, d.partition());
                ps.setLong(6, d.offset());
                ps.executeUpdate();
              }
            })
            .build();
    subscriber.start();
    Thread watcher =
        Thread.ofPlatform()
            .daemon(true)
            .name("assignment-watcher")
            .start(() -> {
              while (true) {
                try {
                  assignments.update(
                      subscriber.assignment().stream()
                          .map(TopicPartition::partition)
                          .collect(Collectors.toSet()));
                  Thread.sleep(100);
                } catch (InterruptedException e) {
                  return;
                } catch (RuntimeException e) {
                  // PostgreSQL down: the handler records before applying anyway
                }
              }
            });
    System.out.println("consumer " + instance + " started");
    ChildSupport.runUntilTerminated(() -> {
      watcher.interrupt();
      subscriber.close();
      ds.close();
    });
  }

  /** The partitions this instance holds, each recorded once per assignment. */
  static final class Assignments {
    private final DataSource ds;
    private final String instance;
    private final Set<Integer> recorded = ConcurrentHashMap.newKeySet();

    Assignments(DataSource ds, String instance) {
      this.ds = ds;
      this.instance = instance;
    }

    /** Records {@code partition} unless recorded for the current assignment. */
    void recorded(int partition) throws SQLException {
      if (recorded.contains(partition)) {
        return;
      }
      synchronized (this) {
        if (recorded.contains(partition)) {
          return;
        }
        try (Connection c = ds.getConnection();
            PreparedStatement ps =
                c.prepareStatement(
                    "INSERT INTO verify_assignment (instance, part) VALUES (?, ?)")) {
          ps.setString(1, instance);
          ps.setInt(2, partition);
          ps.executeUpdate();
        }
        recorded.add(partition);
      }
    }

    /** Forgets partitions no longer assigned; records new ones. */
    void update(Set<Integer> current) {
      recorded.removeIf(p -> !current.contains(p));
      for (int p : current) {
        try {
          recorded(p);
        } catch (SQLException e) {
          throw new IllegalStateException(e);
        }
      }
    }
  }
}
