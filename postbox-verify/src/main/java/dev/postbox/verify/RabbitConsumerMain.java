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
import dev.postbox.jdbc.PostgresShardLeaseStore;
import dev.postbox.rabbitmq.RabbitSubscriber;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;

/**
 * A consumer of the RabbitMQ campaign ({@link RabbitCampaign}), as its own OS process: a {@link
 * RabbitSubscriber} with {@code EFFECTIVELY_ONCE} and per-key order on the subscription's shard
 * queues (single active consumer: the instances share the shards, one active per shard). The
 * handler writes one row into {@code verify_effect} (no unique constraint, so a second effect stays
 * visible) on the inbox transaction's connection, with this incarnation's instance id, the shard as
 * {@code part} and the delivery tag as {@code off}.
 *
 * <p>With {@code shard-leases} the instances share the shard queues through leases in PostgreSQL
 * ({@link PostgresShardLeaseStore}, a lease of {@value #LEASE_SECONDS} s, shorter than the pause
 * scenario's freeze, so a frozen instance loses its shards to the others).
 *
 * <p>Arguments: JDBC URL, AMQP URI, topic, subscription, instance id, shards, consumer mode ({@code
 * inbox} or {@code shard-leases}), and the RabbitMQ nodes' {@code host:port} comma-separated (a
 * cluster: the subscriber's {@code addresses}) or absent.
 */
public final class RabbitConsumerMain {

  private static final ObjectMapper JSON = new ObjectMapper();

  /** The shard lease of the {@code shard-leases} mode, in seconds. */
  static final int LEASE_SECONDS = 4;

  /** The heartbeat timeout the consumers ask for. */
  static final int HEARTBEAT_SECONDS = 2;

  private RabbitConsumerMain() {}

  public static void main(String[] args) throws Exception {
    String instance = args[4];
    HikariDataSource ds = ChildSupport.dataSource(args[0], instance, 12, "");
    // on a PostgreSQL pair: the applied messages journaled once their transaction committed
    javax.sql.DataSource stores =
        args.length > 8 && !args[8].isEmpty()
            ? AppliedJournal.journaling(ds, CommitJournal.open(java.nio.file.Path.of(args[8])))
            : ds;
    Subscription subscription =
        Subscription.builder(args[3])
            .topics(args[2])
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .ordering(Ordering.KEY)
            .concurrency(8)
            .shutdownTimeout(Duration.ofSeconds(10))
            // transient failures (a broker restart, a lost connection) are retried for minutes,
            // never given up during the campaign (a dead letter is a violation)
            .failureHandler(
                FailureHandlers.of(
                    RetryPolicy.builder()
                        .maxAttempts(10_000)
                        .maxDuration(Duration.ofMinutes(10))
                        .backoff(new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), 2, 0.5))
                        .build()))
            .build();
    RabbitSubscriber.Builder builder = RabbitSubscriber.builder(args[1], subscription);
    if (args.length > 7 && !args[7].isEmpty()) {
      builder.addresses(java.util.List.of(args[7].split(",")));
    }
    builder
        .shards(Integer.parseInt(args[5]))
        .prefetch(50)
        // a frozen consumer's connection is closed after about 2 x 2 s: the pause scenario
        .heartbeat(Duration.ofSeconds(HEARTBEAT_SECONDS))
        .inbox(PostgresInboxStore.create(stores))
        .deadLetters(PostgresDeadLetterStore.create(ds))
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
          AppliedJournal.applied(c, body.path("phase").asInt(), d.message().id());
        });
    if (args.length > 6 && args[6].equals(ConsumerMode.SHARD_LEASES.cliName())) {
      builder
          .shardLeases(PostgresShardLeaseStore.create(ds))
          .shardLeaseTtl(Duration.ofSeconds(LEASE_SECONDS));
    }
    RabbitSubscriber subscriber = builder.build();
    subscriber.start();
    System.out.println("consumer " + instance + " started");
    ChildSupport.runUntilTerminated(() -> {
      subscriber.close();
      ds.close();
    });
  }
}
