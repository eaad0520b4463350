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
    RecordingAssignor.recorder(
        (partitions, generation) -> record(ds, instance, partitions, generation));
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
            .consumerProperty("partition.assignment.strategy", RecordingAssignor.class.getName())
            .handler(d -> {
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
    ConsumerStateFile.start(subscriber, instance);
    System.out.println("consumer " + instance + " started");
    ChildSupport.runUntilTerminated(() -> {
      subscriber.close();
      ds.close();
    });
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
