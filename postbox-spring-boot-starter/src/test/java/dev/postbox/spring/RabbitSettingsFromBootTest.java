package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.testkit.internal.TlsMaterial;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.ssl.DefaultSslBundleRegistry;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.jks.JksSslStoreBundle;
import org.springframework.boot.ssl.jks.JksSslStoreDetails;
import org.springframework.mock.env.MockEnvironment;

/**
 * {@code spring.rabbitmq.*} as Postbox's RabbitMQ clients read it (no broker is reached): the URI
 * from host, port, username, password and virtual-host, or from addresses; {@code
 * postbox.rabbitmq.uri} over all of them; TLS from a trust store or a named SSL bundle; and the TLS
 * settings Postbox does not honour refused by name.
 */
class RabbitSettingsFromBootTest {

  private static MockEnvironment rabbit() {
    return new MockEnvironment().withProperty("postbox.transport", "rabbitmq");
  }

  private static PostboxProperties bind(MockEnvironment env) {
    return PostboxSettingsBinder.bind(env);
  }

  @Test
  void theUriComesFromHostPortCredentialsAndVirtualHost() {
    PostboxProperties p =
        bind(
            rabbit()
                .withProperty("spring.rabbitmq.host", "rabbit.example")
                .withProperty("spring.rabbitmq.port", "5673")
                .withProperty("spring.rabbitmq.username", "app")
                .withProperty("spring.rabbitmq.password", "s:cret word")
                .withProperty("spring.rabbitmq.virtual-host", "orders"));
    assertThat(p.getRabbitmq().getUri())
        .isEqualTo("amqp://app:s%3Acret%20word@rabbit.example:5673/orders");
    assertThat(p.getRabbitmq().fromSpring().addresses()).isEmpty();
    assertThat(p.getRabbitmq().fromSpring().tls()).isFalse();
  }

  @Test
  void bootsDefaultsFillWhatIsNotSetAndTheRootVirtualHostIsEncoded() {
    PostboxProperties p = bind(rabbit().withProperty("spring.rabbitmq.host", "rabbit.example"));
    assertThat(p.getRabbitmq().getUri()).isEqualTo("amqp://guest:guest@rabbit.example:5672/%2F");
  }

  @Test
  void withoutHostOrAddressesNothingIsTakenFromSpringAndTheBrokerIsStillRequired() {
    assertThatThrownBy(() -> bind(rabbit().withProperty("spring.rabbitmq.username", "app")))
        .isInstanceOf(PostboxConfigurationException.class)
        .hasMessageContaining("postbox.rabbitmq.uri is required");
  }

  @Test
  void addressesAreTriedInOrderAndTheFirstOnesCredentialsAndVhostCount() {
    PostboxProperties p =
        bind(
            rabbit()
                .withProperty("spring.rabbitmq.host", "ignored.example")
                .withProperty(
                    "spring.rabbitmq.addresses",
                    "amqps://app:pw@rabbit-1.example/orders, rabbit-2.example:5675"));
    RabbitClientSettings s = p.getRabbitmq().fromSpring();
    assertThat(p.getRabbitmq().getUri()).isEqualTo("amqp://app:pw@rabbit-1.example:5671/orders");
    assertThat(s.addresses()).containsExactly("rabbit-1.example:5671", "rabbit-2.example:5675");
    assertThat(s.tls()).as("an amqps:// address turns TLS on").isTrue();
  }

  @Test
  void postboxRabbitmqUriWinsOverSpringsAddressButSpringsTlsStillApplies() {
    PostboxProperties p =
        bind(
            rabbit()
                .withProperty("postbox.rabbitmq.uri", "amqp://u:p@explicit.example:5671/%2F")
                .withProperty("spring.rabbitmq.addresses", "a.example,b.example")
                .withProperty("spring.rabbitmq.ssl.enabled", "true"));
    assertThat(p.getRabbitmq().getUri()).isEqualTo("amqp://u:p@explicit.example:5671/%2F");
    assertThat(p.getRabbitmq().fromSpring().addresses()).isEmpty();
    assertThat(p.getRabbitmq().fromSpring().tls()).isTrue();
  }

  @Test
  void aKafkaApplicationDoesNotReadSpringRabbitmq() {
    PostboxProperties p =
        bind(
            new MockEnvironment()
                .withProperty("postbox.kafka.bootstrap-servers", "k:9092")
                .withProperty("spring.rabbitmq.addresses", "http://not-amqp"));
    assertThat(p.getRabbitmq().getUri()).isEmpty();
  }

  @Test
  void tlsSettingsPostboxDoesNotHonourAreRefusedByName() {
    assertThatThrownBy(() ->
            bind(
                rabbit()
                    .withProperty("spring.rabbitmq.host", "rabbit.example")
                    .withProperty("spring.rabbitmq.ssl.enabled", "true")
                    .withProperty("spring.rabbitmq.ssl.validate-server-certificate", "false")
                    .withProperty("spring.rabbitmq.ssl.verify-hostname", "false")))
        .isInstanceOf(PostboxConfigurationException.class)
        .hasMessageContaining("spring.rabbitmq.ssl.validate-server-certificate")
        .hasMessageContaining("spring.rabbitmq.ssl.verify-hostname");
  }

  @Test
  void theTlsContextComesFromTheTrustStore(@TempDir Path dir) {
    TlsMaterial tls = TlsMaterial.inDirectory(dir, "localhost");
    PostboxProperties p =
        bind(
            rabbit()
                .withProperty("spring.rabbitmq.host", "localhost")
                .withProperty("spring.rabbitmq.ssl.enabled", "true")
                .withProperty("spring.rabbitmq.ssl.trust-store", "file:" + tls.trustStore())
                .withProperty("spring.rabbitmq.ssl.trust-store-type", "PKCS12")
                .withProperty("spring.rabbitmq.ssl.trust-store-password", tls.password()));
    assertThat(p.getRabbitmq().getUri()).isEqualTo("amqp://guest:guest@localhost:5671/%2F");
    Optional<SSLContext> context = p.getRabbitmq().fromSpring().sslContext(Optional.empty());
    assertThat(context).isPresent();
    assertThat(context.get()).isNotSameAs(defaultContext());
  }

  @Test
  void theTlsContextComesFromANamedSslBundle(@TempDir Path dir) {
    TlsMaterial tls = TlsMaterial.inDirectory(dir, "localhost");
    SslBundle bundle =
        SslBundle.of(
            new JksSslStoreBundle(
                null,
                new JksSslStoreDetails(
                    "PKCS12", null, tls.trustStore().toString(), tls.password())));
    DefaultSslBundleRegistry bundles = new DefaultSslBundleRegistry("broker", bundle);
    RabbitClientSettings s =
        bind(rabbit()
                .withProperty("spring.rabbitmq.host", "localhost")
                .withProperty("spring.rabbitmq.ssl.bundle", "broker"))
            .getRabbitmq()
            .fromSpring();
    assertThat(s.tls()).as("a bundle turns TLS on").isTrue();
    assertThat(s.sslContext(Optional.of(bundles))).isPresent();

    RabbitClientSettings missing =
        bind(rabbit()
                .withProperty("spring.rabbitmq.host", "localhost")
                .withProperty("spring.rabbitmq.ssl.bundle", "absent"))
            .getRabbitmq()
            .fromSpring();
    assertThatThrownBy(() -> missing.sslContext(Optional.of(bundles)))
        .isInstanceOf(PostboxConfigurationException.class)
        .hasMessageContaining("no SSL bundle named 'absent'");
    assertThat(List.of(s.ssl().bundle())).containsExactly("broker");
  }

  private static SSLContext defaultContext() {
    try {
      return SSLContext.getDefault();
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }
}
