package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.JaasContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KafkaSecurityTest {

  @TempDir Path dir;

  @Test
  void standsForSaslSslWithScramSha512AndHostnameVerification() throws Exception {
    Path trust = Files.writeString(dir.resolve("ca.p12"), "x");
    KafkaSecurity s = KafkaSecurity.saslSsl("relay", "pw").trustStore(trust, "tpw").build();
    assertThat(s.clientProperties())
        .containsEntry("security.protocol", "SASL_SSL")
        .containsEntry("sasl.mechanism", "SCRAM-SHA-512")
        .containsEntry("ssl.truststore.location", trust.toString())
        .containsEntry("ssl.truststore.type", "PKCS12")
        .containsEntry("ssl.truststore.password", "tpw")
        .containsEntry("ssl.endpoint.identification.algorithm", "https");
    assertThat(KafkaSecurity.PROPERTIES).containsAll(s.clientProperties().keySet());
  }

  @Test
  void aPasswordWithQuotesAndBackslashesSurvivesTheJaasSyntax() {
    String password = "a\"b\\c;d e";
    KafkaSecurity s =
        KafkaSecurity.saslSsl("us\"er", password)
            .mechanism(KafkaSecurity.Mechanism.SCRAM_SHA_256)
            .build();
    String jaas = s.clientProperties().get("sasl.jaas.config").toString();
    var entry =
        JaasContext.loadClientContext(java.util.Map.of("sasl.jaas.config", new Password(jaas)))
            .configurationEntries()
            .get(0);
    java.util.Map<String, Object> options = new java.util.HashMap<>(entry.getOptions());
    assertThat(options).containsEntry("password", password).containsEntry("username", "us\"er");
    assertThat(s.clientProperties()).containsEntry("sasl.mechanism", "SCRAM-SHA-256");
    assertThat(s.toString()).doesNotContain(password).contains("us\"er");
  }

  @Test
  void pemTrustStoresHaveNoPasswordAndHostnameVerificationCanBeTurnedOff() throws Exception {
    Path pem = Files.writeString(dir.resolve("ca.pem"), "x");
    KafkaSecurity s =
        KafkaSecurity.saslSsl("u", "p").trustStore(pem).hostnameVerification(false).build();
    assertThat(s.clientProperties())
        .containsEntry("ssl.truststore.type", "PEM")
        .doesNotContainKey("ssl.truststore.password")
        .containsEntry("ssl.endpoint.identification.algorithm", "");
    assertThatThrownBy(() -> KafkaSecurity.saslSsl("u", "p").trustStore(pem, "pw").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("PEM");
  }

  @Test
  void refusesBlankCredentialsMissingStoresAndStoresWithoutPassword() throws Exception {
    assertThatThrownBy(() -> KafkaSecurity.saslSsl(" ", "p").build())
        .hasMessageContaining("username");
    assertThatThrownBy(() -> KafkaSecurity.saslSsl("u", "").build())
        .hasMessageContaining("password");
    assertThatThrownBy(
            () -> KafkaSecurity.saslSsl("u", "p").trustStore(dir.resolve("none.p12"), "x").build())
        .hasMessageContaining("does not exist");
    Path jks = Files.writeString(dir.resolve("ca.jks"), "x");
    assertThatThrownBy(() -> KafkaSecurity.saslSsl("u", "p").trustStore(jks, "").build())
        .hasMessageContaining("needs its password");
  }

  @Test
  void theSubscriberRefusesTheSamePropertyTwice() {
    KafkaSecurity s = KafkaSecurity.saslSsl("u", "p").build();
    assertThatThrownBy(() ->
            KafkaSubscriber.builder(
                    "localhost:9092",
                    dev.postbox.core.consumer.Subscription.builder("x").topics("t").build())
                .handler(d -> {})
                .security(s)
                .consumerProperty("sasl.mechanism", "PLAIN")
                .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sasl.mechanism");
    KafkaSubscriber ok =
        KafkaSubscriber.builder(
                "localhost:9092",
                dev.postbox.core.consumer.Subscription.builder("x").topics("t").build())
            .handler(d -> {})
            .security(s)
            .build();
    assertThat(ok.consumerConfig()).containsEntry("security.protocol", "SASL_SSL");
  }
}
