package dev.postbox.demo;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.reply.DurableRequests;
import dev.postbox.core.reply.Reply;
import dev.postbox.core.reply.Requester;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.jdbc.OperationsProbe;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.jdbc.cdc.CdcRelay;
import dev.postbox.kafka.ConsumerLagProbe;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.kafka.KafkaRequester;
import dev.postbox.kafka.KafkaResponder;
import dev.postbox.kafka.KafkaSecurity;
import dev.postbox.kafka.KafkaShareSubscriber;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.kafka.KafkaTransformer;
import dev.postbox.micrometer.MicrometerPostboxMetrics;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.rabbitmq.RabbitRequester;
import dev.postbox.rabbitmq.RabbitSubscriber;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import javax.sql.DataSource;

/**
 * The code samples of the guides (docs/guides/kafka.md, rabbitmq.md, cdc.md, request-reply.md), of
 * the relay internals (docs/relay.md) and of docs/observability.md: each method's body is a page's
 * block (DocSnippetsTest compares them), with what the blocks assume stubbed at the bottom.
 */
@SuppressWarnings("unused")
final class GuideSnippets {

  // --- docs/guides/kafka.md

  void transformer(int instanceNumber) {
    KafkaTransformer enricher =
        KafkaTransformer.builder(
                "localhost:9092",
                Subscription.builder("enricher")
                    .topics("shop.orders")
                    .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                    .build())
            .transactionalId(
                "enricher-" + instanceNumber) // stable per instance: a restart fences its old self
            .transform((order, out) ->
                out.emit(
                    Message.builder("shop.orders.enriched", "order.enriched")
                        .key(order.key().orElseThrow())
                        .jsonPayload(enrich(order))
                        .build()))
            .build();
    enricher.start();
  }

  void shareGroup(DataSource dataSource) {
    KafkaShareSubscriber mailer =
        KafkaShareSubscriber.builder(
                "localhost:9092",
                Subscription.builder("mailer")
                    .topics("shop.orders")
                    .ordering(Ordering.UNORDERED)
                    .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                    .build())
            .inbox(PostgresInboxStore.create(dataSource))
            .deadLetters(PostgresDeadLetterStore.create(dataSource))
            .handler(delivery -> sendMail(delivery.message(), delivery.connection().orElseThrow()))
            .build();
    mailer.start(); // start as many instances as you like
  }

  void security(
      String bootstrap,
      String trustStorePassword,
      Subscription subscription,
      MessageHandler handler) {
    KafkaSecurity security =
        KafkaSecurity.saslSsl(
                "relay",
                System.getenv("KAFKA_PASSWORD")) // SCRAM-SHA-512; .mechanism(SCRAM_SHA_256)
            .trustStore(
                Path.of("/etc/postbox/kafka-ca.p12"),
                trustStorePassword) // PKCS#12, .jks, or .pem without password
            .build(); // hostname verification stays on
    KafkaRelayPublisher.builder(bootstrap).security(security).build();
    KafkaSubscriber.builder(bootstrap, subscription).security(security).handler(handler).build();
  }

  // --- docs/guides/rabbitmq.md

  void rabbitmq(DataSource dataSource) {
    Relay relay =
        Relay.builder(
                PostgresRelayStore.create(dataSource),
                RabbitRelayPublisher.builder("amqp://guest:guest@localhost:5672/%2F").build())
            .build();
    RabbitSubscriber inventory =
        RabbitSubscriber.builder(
                "amqp://guest:guest@localhost:5672/%2F",
                Subscription.builder("inventory")
                    .topics("orders")
                    .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                    .build())
            .inbox(PostgresInboxStore.create(dataSource))
            .handler(d -> apply(d.connection().orElseThrow(), d.message()))
            .build();
    inventory.start(); // declares its queues; start subscribers before the relay publishes to a new
    // topic
  }

  // --- docs/guides/cdc.md and docs/relay.md

  void cdc(DataSource dataSource, String replicationUrl) {
    CdcRelay relay =
        CdcRelay.builder(
                dataSource, replicationUrl, KafkaRelayPublisher.builder("localhost:9092").build())
            .build();
    relay.start(); // one instance streams, the others stand by
  }

  void cdcFailover(DataSource dataSource, RelayPublisher publisher) {
    CdcRelay relay =
        CdcRelay.builder(
                dataSource,
                "jdbc:postgresql://db1:5432,db2:5432/shop?targetServerType=primary",
                publisher)
            .failoverSlot(true)
            .build();
  }

  void cdcRelay(DataSource dataSource) {
    CdcRelay relay =
        CdcRelay.builder(
                dataSource, // the outbox's schema (current schema) for SQL
                "jdbc:postgresql://db:5432/app?user=relay", // same database, for the replication
                // connection
                KafkaRelayPublisher.builder("localhost:9092").build())
            .build();
    relay.start(); // ... relay.close() on shutdown
  }

  // --- docs/guides/request-reply.md

  void requestReply(
      String bootstrap,
      InboxStore inbox,
      DeadLetterStore deadLetters,
      int instanceIndex,
      String orderId,
      String json)
      throws InterruptedException {
    // payments: an EFFECTIVELY_ONCE subscription on the request topic; the reply is stored with the
    // inbox row
    KafkaResponder payments =
        KafkaResponder.builder(bootstrap)
            .source("/payments")
            .replyType("charge.authorised")
            .build();
    Subscription sub =
        Subscription.builder("payments")
            .topics("payments.requests")
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .build();
    KafkaSubscriber server =
        KafkaSubscriber.builder(bootstrap, sub)
            .inbox(inbox)
            .deadLetters(deadLetters)
            .handler(
                payments.handler(
                    sub,
                    request -> {
                      long charge =
                          debit(
                              request.connection().orElseThrow(),
                              request.event(Authorise.class)); // the effect
                      return Payload.json(
                          "{\"authorised\":true,\"charge\":" + charge + "}"); // the reply
                    }))
            .build();

    // orders: each instance reads its own partition of the reply topic
    Requester requester =
        KafkaRequester.builder(bootstrap, "payments.replies")
            .replyPartition(instanceIndex)
            .lateReplyListener(reply -> recordLate(reply))
            .build()
            .start();
    Message request =
        Message.builder("payments.requests", "charge.authorise")
            .key(orderId)
            .jsonPayload(json)
            .build();
    CompletableFuture<Reply> answer = requester.request(request, Duration.ofSeconds(5));
    Reply reply = requester.requestAndWait(request, Duration.ofSeconds(5)); // or block
  }

  void durableRequests(
      Outbox outbox,
      DataSource ds,
      Order order,
      String bootstrap,
      InboxStore inbox,
      DeadLetterStore deadLetters) {
    DurableRequests payments =
        KafkaRequester.durableRequests("payments.replies"); // reply-to payments.replies:0
    outbox.inTransaction(
        ds,
        tx -> {
          insertOrder(tx.connection(), order); // the business change
          tx.write(payments.request(authorise(order))); // the request, same commit
          return null;
        });
    Subscription replies =
        Subscription.builder("orders-payment-replies")
            .topics("payments.replies")
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .build();
    KafkaSubscriber.builder(bootstrap, replies)
        .inbox(inbox)
        .deadLetters(deadLetters)
        .handler(
            payments.replyHandler(
                (reply, d) -> markAuthorised(d.connection().orElseThrow(), reply)))
        .build()
        .start();
  }

  void rabbitDurableRequests(
      Outbox outbox,
      DataSource ds,
      Order order,
      String uri,
      InboxStore inbox,
      DeadLetterStore deadLetters) {
    DurableRequests payments =
        RabbitRequester.durableRequests("payments.replies"); // reply-to /exchanges/payments.replies
    outbox.inTransaction(
        ds,
        tx -> {
          insertOrder(tx.connection(), order); // the business change
          tx.write(payments.request(authorise(order))); // the request, same commit
          return null;
        });
    Subscription replies =
        Subscription.builder("orders-payment-replies")
            .topics("payments.replies")
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .build();
    RabbitSubscriber.builder(uri, replies)
        .inbox(inbox)
        .deadLetters(deadLetters)
        .handler(
            payments.replyHandler(
                (reply, d) -> markAuthorised(d.connection().orElseThrow(), reply)))
        .build()
        .start(); // declares the shard queues the replies wait in
  }

  // --- docs/observability.md

  void metrics(
      RelayStore relayStore,
      RelayPublisher publisher,
      String bootstrap,
      Subscription subscription,
      MessageHandler handler,
      DataSource dataSource) {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    PostboxMetrics metrics = MicrometerPostboxMetrics.of(registry);
    Relay relay = Relay.builder(relayStore, publisher).metrics(metrics).build(); // postbox.relay.*
    KafkaSubscriber sub =
        KafkaSubscriber.builder(bootstrap, subscription)
            .metrics(metrics)
            .handler(handler)
            .build(); // postbox.consumer.*
    OperationsProbe.postgres(dataSource).bindTo(metrics); // postbox.outbox/deadletters/parked.*
    ConsumerLagProbe.builder(bootstrap)
        .groups("inventory")
        .build()
        .bindTo(metrics); // postbox.group.*
  }

  // --- what the blocks assume

  record Order(String id) {}

  record Authorise(String orderId, long amountCents) {}

  private static String enrich(Message order) {
    return "{}";
  }

  private static void sendMail(Message message, Connection tx) {}

  private static void apply(Connection tx, Message message) {}

  private static long debit(Connection tx, Authorise request) {
    return 1;
  }

  private static void recordLate(Reply reply) {}

  private static void insertOrder(Connection tx, Order order) {}

  private static Message authorise(Order order) {
    return Message.builder("payments.requests", "charge.authorise")
        .key(order.id())
        .jsonPayload("{}")
        .build();
  }

  private static void markAuthorised(Connection tx, Reply reply) {}
}
