package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.kafka.KafkaResponder;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.rabbitmq.RabbitResponder;
import dev.postbox.rabbitmq.RabbitSubscriber;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;

/**
 * The responder of the request-reply scenario ({@link RequestReplyScenario}), as its own OS
 * process: an {@code EFFECTIVELY_ONCE} subscription whose reply handler inserts one row into {@code
 * rr_effect} (no unique constraint: a second effect of a request would be a second row) and answers
 * {@code {"request":"<id>","effect":<row id>}}; the reply is stored with the inbox row.
 *
 * <p>Arguments: JDBC URL (with the schema), bootstrap servers, request topic, group, incarnation.
 * On RabbitMQ the second is the AMQP URI ({@code amqp://...}): a {@link RabbitSubscriber} on 2
 * shard queues with a {@link RabbitResponder}, a reply that comes back (its requester's queue is
 * gone) given up after 4 quick attempts.
 */
public final class RrResponderMain {

  private RrResponderMain() {}

  public static void main(String[] args) throws Exception {
    String incarnation = args[4];
    HikariDataSource ds = ChildSupport.dataSource(args[0], "rr-responder", 6, "");
    Subscription.Builder b =
        Subscription.builder(args[3])
            .topics(args[2])
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .concurrency(4)
            .shutdownTimeout(Duration.ofSeconds(5));
    if (args[1].startsWith("amqp")) {
      // a reply to the queue of a requester that crashed comes back (the queue went with it): a
      // few quick attempts, then the dead letter; the restarted requester asks again
      b.failureHandler(
          FailureHandlers.of(
              RetryPolicy.builder()
                  .maxAttempts(4)
                  .backoff(new Backoff(Duration.ofMillis(50), Duration.ofMillis(500), 2, 0.5))
                  .build()));
    }
    Subscription sub = b.build();
    AutoCloseable[] open =
        args[1].startsWith("amqp") ? rabbit(args, sub, ds) : kafka(args, sub, ds);
    System.out.println("responder incarnation " + incarnation + " started");
    ChildSupport.runUntilTerminated(() -> {
      for (AutoCloseable c : open) {
        try {
          c.close();
        } catch (Exception e) {
          System.out.println("closing failed: " + e);
        }
      }
      ds.close();
    });
  }

  private static AutoCloseable[] kafka(String[] args, Subscription sub, HikariDataSource ds) {
    KafkaResponder responder = KafkaResponder.builder(args[1]).source("/verify/responder").build();
    KafkaSubscriber s =
        KafkaSubscriber.builder(args[1], sub)
            .inbox(PostgresInboxStore.create(ds))
            .deadLetters(PostgresDeadLetterStore.create(ds))
            // static membership: a restarted responder takes its predecessor's partitions at once
            .consumerProperty("group.instance.id", args[3] + "-1")
            .consumerProperty("session.timeout.ms", 6000)
            .handler(responder.handler(sub, d -> answer(d, args[4])))
            .build();
    s.start();
    return new AutoCloseable[] {s, responder};
  }

  private static AutoCloseable[] rabbit(String[] args, Subscription sub, HikariDataSource ds) {
    RabbitResponder responder =
        RabbitResponder.builder(args[1]).source("/verify/responder").build();
    RabbitSubscriber s =
        RabbitSubscriber.builder(args[1], sub)
            .shards(2)
            .inbox(PostgresInboxStore.create(ds))
            .deadLetters(PostgresDeadLetterStore.create(ds))
            .handler(responder.handler(sub, d -> answer(d, args[4])))
            .build();
    s.start(); // declares the request topic's exchange and shard queues
    return new AutoCloseable[] {s, responder};
  }

  /** The effect (one {@code rr_effect} row) and the reply naming it. */
  private static Payload answer(Delivery d, String incarnation) throws Exception {
    Connection c = d.connection().orElseThrow();
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO rr_effect (request_id, incarnation) VALUES (?, ?) RETURNING id")) {
      ps.setObject(1, d.message().id());
      ps.setInt(2, Integer.parseInt(incarnation));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return Payload.json(
            "{\"request\":\"" + d.message().id() + "\",\"effect\":" + rs.getLong(1) + "}");
      }
    }
  }
}
