package dev.postbox.verify;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.kafka.KafkaResponder;
import dev.postbox.kafka.KafkaSubscriber;
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
 */
public final class RrResponderMain {

  private RrResponderMain() {}

  public static void main(String[] args) throws Exception {
    String incarnation = args[4];
    HikariDataSource ds = ChildSupport.dataSource(args[0], "rr-responder", 6, "");
    Subscription sub =
        Subscription.builder(args[3])
            .topics(args[2])
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .concurrency(4)
            .shutdownTimeout(Duration.ofSeconds(5))
            .build();
    KafkaResponder responder = KafkaResponder.builder(args[1]).source("/verify/responder").build();
    KafkaSubscriber s =
        KafkaSubscriber.builder(args[1], sub)
            .inbox(PostgresInboxStore.create(ds))
            .deadLetters(PostgresDeadLetterStore.create(ds))
            // static membership: a restarted responder takes its predecessor's partitions at once
            .consumerProperty("group.instance.id", args[3] + "-1")
            .consumerProperty("session.timeout.ms", 6000)
            .handler(
                responder.handler(
                    sub,
                    d -> {
                      Connection c = d.connection().orElseThrow();
                      try (PreparedStatement ps =
                          c.prepareStatement(
                              "INSERT INTO rr_effect (request_id, incarnation) VALUES (?, ?)"
                                  + " RETURNING id")) {
                        ps.setObject(1, d.message().id());
                        ps.setInt(2, Integer.parseInt(incarnation));
                        try (ResultSet rs = ps.executeQuery()) {
                          rs.next();
                          return Payload.json(
                              "{\"request\":\""
                                  + d.message().id()
                                  + "\",\"effect\":"
                                  + rs.getLong(1)
                                  + "}");
                        }
                      }
                    }))
            .build();
    s.start();
    System.out.println("responder incarnation " + incarnation + " started");
    ChildSupport.runUntilTerminated(() -> {
      s.close();
      responder.close();
      ds.close();
    });
  }
}
