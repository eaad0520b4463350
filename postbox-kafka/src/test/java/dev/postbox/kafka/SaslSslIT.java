package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.relay.Relay;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresRelayStore;
import dev.postbox.testkit.DeliveryHistory;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.KafkaSaslSslListener;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The relay publisher and the subscriber over SASL_SSL (SCRAM-SHA-512 + TLS), against the test
 * kit's broker started with such a listener (a dedicated broker: the shared one is plaintext only);
 * rejected credentials and an untrusted certificate fail at start, and a plaintext client gets
 * nothing through the TLS port.
 */
@PostboxTest
class SaslSslIT extends Subscribers {

  private static final String USER = "postbox-app";
  private static final String PASSWORD = "s3cret-Pw_42";
  private static KafkaBroker broker;
  private static KafkaSaslSslListener listener;

  @BeforeAll
  static void startBroker() {
    broker = KafkaBroker.builder().saslSsl(USER, PASSWORD).build();
    broker.start();
    listener = broker.saslSsl().orElseThrow();
  }

  @AfterAll
  static void stopBroker() {
    if (broker != null) {
      broker.close();
    }
  }

  private static KafkaSecurity security(String password) {
    return KafkaSecurity.saslSsl(USER, password)
        .trustStore(listener.trustStore(), listener.trustStorePassword())
        .build();
  }

  @Test
  void relayPublishesAndSubscriberConsumesOverSaslSsl(PostboxTestContext ctx) throws Exception {
    String topic = "secure-orders";
    broker.createTopic(topic, 3);
    Shop shop = new Shop(ctx.dataSource(), topic);
    Map<String, List<Long>> seen = new ConcurrentHashMap<>();
    start(
        KafkaSubscriber.builder(
                listener.bootstrapServers(),
                Subscription.builder("secure")
                    .topics(topic)
                    .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                    .ordering(Ordering.KEY)
                    .build())
            .security(security(PASSWORD))
            .inbox(PostgresInboxStore.create(ctx.dataSource()))
            .forceInboxRetention(true)
            .handler(d ->
                seen.computeIfAbsent(
                        d.message().key().orElseThrow(),
                        k -> java.util.Collections.synchronizedList(new ArrayList<>()))
                    .add(Long.parseLong(d.message().header("seq").orElseThrow()))));
    Relay relay =
        Relay.builder(
                PostgresRelayStore.create(ctx.dataSource()),
                KafkaRelayPublisher.builder(listener.bootstrapServers())
                    .security(security(PASSWORD))
                    .build())
            .pollInterval(Duration.ofMillis(100))
            .build();
    int keys = 5;
    int perKey = 20;
    try (relay) {
      relay.start();
      for (int i = 0; i < keys * perKey; i++) {
        shop.orderAndRecord("k" + (i % keys));
      }
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> seen.values().stream().mapToInt(List::size).sum() >= keys * perKey);
    }
    for (int k = 0; k < keys; k++) {
      List<Long> expected = new ArrayList<>();
      for (long s = 1; s <= perKey; s++) {
        expected.add(s);
      }
      assertThat(seen.get("k" + k)).as("key k%d in commit order, once each", k).isEqualTo(expected);
    }
    // the records themselves, read back through the broker's plaintext listener
    DeliveryHistory.Report report =
        shop.readAndCheck(broker.bootstrapServers(), Duration.ofSeconds(60));
    assertThat(report.ok()).as(report.toString()).isTrue();
    assertThat(report.committed()).isEqualTo(keys * perKey);
  }

  @Test
  void aWrongPasswordFailsTheRelayAndTheSubscriberAtStart(PostboxTestContext ctx) {
    dev.postbox.jdbc.PostboxMigrations.migrate(ctx.dataSource());
    Relay relay =
        Relay.builder(
                PostgresRelayStore.create(ctx.dataSource()),
                KafkaRelayPublisher.builder(listener.bootstrapServers())
                    .security(security("not-the-password"))
                    .build())
            .build();
    try (relay) {
      assertThatThrownBy(relay::start)
          .isInstanceOf(KafkaAccessDeniedException.class)
          .hasCauseInstanceOf(SaslAuthenticationException.class)
          .hasMessageContaining("relay publisher")
          .hasMessageContaining("refused the SASL_SSL connection")
          .hasMessageNotContaining("not-the-password");
      assertThat(relay.stats().publishFailures()).as("no publish was attempted").isZero();
    }
    KafkaSubscriber subscriber =
        KafkaSubscriber.builder(
                listener.bootstrapServers(),
                Subscription.builder("wrong-password").topics("t").build())
            .security(security("not-the-password"))
            .handler(d -> {})
            .build();
    assertThatThrownBy(subscriber::start)
        .isInstanceOf(KafkaAccessDeniedException.class)
        .hasCauseInstanceOf(SaslAuthenticationException.class)
        .hasMessageContaining("subscription 'wrong-password'");
  }

  @Test
  void anUntrustedCertificateFailsAtStart() {
    // no trust store: the JDK's default CAs do not trust the broker's self-signed certificate
    KafkaSubscriber subscriber =
        KafkaSubscriber.builder(
                listener.bootstrapServers(), Subscription.builder("untrusted").topics("t").build())
            .security(KafkaSecurity.saslSsl(USER, PASSWORD).build())
            .handler(d -> {})
            .build();
    assertThatThrownBy(subscriber::start)
        .isInstanceOf(KafkaAccessDeniedException.class)
        .hasCauseInstanceOf(SslAuthenticationException.class);
  }

  @Test
  void aPlaintextClientGetsNothingThroughTheTlsPort() {
    broker.createTopic("plain-to-tls", 1);
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, listener.bootstrapServers());
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 3_000);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
      assertThatThrownBy(() ->
              producer
                  .send(new ProducerRecord<>("plain-to-tls", new byte[] {1}))
                  .get(30, TimeUnit.SECONDS))
          .as("no metadata over a plaintext connection to the TLS listener")
          .isInstanceOfAny(
              ExecutionException.class, org.apache.kafka.common.errors.TimeoutException.class);
    }
  }

  @Test
  void securityAndTheSamePropertyAsARawPropertyAreRefused() {
    assertThatThrownBy(() ->
            KafkaRelayPublisher.builder(listener.bootstrapServers())
                .security(security(PASSWORD))
                .producerProperty("security.protocol", "PLAINTEXT")
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("security.protocol");
    assertThatThrownBy(() ->
            KafkaSecurity.saslSsl(USER, PASSWORD)
                .trustStore(java.nio.file.Path.of("/nonexistent/truststore.p12"), "x")
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("does not exist");
    assertThat(security(PASSWORD).toString()).doesNotContain(PASSWORD);
  }
}
