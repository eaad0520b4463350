package dev.postbox.spring;

import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.SSLContext;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.ssl.NoSuchSslBundleException;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.boot.ssl.jks.JksSslStoreBundle;
import org.springframework.boot.ssl.jks.JksSslStoreDetails;
import org.springframework.core.env.Environment;

/**
 * How Postbox's RabbitMQ clients (relay, listeners, at-most-once sender, queue-depth reads) connect
 * when the application configured RabbitMQ for Spring Boot ({@code spring.rabbitmq.*}), the way
 * {@link KafkaClientSettings} reads {@code spring.kafka.*}: the broker's URI ({@code host}, {@code
 * port}, {@code username}, {@code password}, {@code virtual-host}, or {@code addresses}, each
 * {@code host[:port]} or {@code amqp[s]://[user:password@]host[:port][/vhost]}) unless {@code
 * postbox.rabbitmq.uri} is set (which then says all of that), the further {@code addresses} to try
 * in order, and TLS ({@code spring.rabbitmq.ssl.*}: a named SSL bundle, or key and trust stores),
 * which applies to either URI.
 *
 * <p>Read from the environment by the settings binder (no RabbitMQ type is named, so a Kafka
 * application never loads the client); the TLS context is made by {@link #sslContext} when the
 * RabbitMQ transport is wired, with the application's {@link SslBundles}.
 *
 * @param uri the URI from {@code spring.rabbitmq.*}; blank when neither {@code host} nor {@code
 *     addresses} is set (Boot's default {@code localhost} is not taken as a choice of broker)
 * @param addresses {@code host:port} of each of {@code spring.rabbitmq.addresses}, in order (empty:
 *     the URI's host only)
 * @param tls whether TLS is on: {@code ssl.enabled}, else a {@code ssl.bundle} or an {@code
 *     amqps://} address
 * @param ssl the {@code spring.rabbitmq.ssl.*} settings
 */
record RabbitClientSettings(String uri, List<String> addresses, boolean tls, Ssl ssl) {

  /** Nothing from Spring Boot. */
  static final RabbitClientSettings NONE = new RabbitClientSettings("", List.of(), false, Ssl.NONE);

  private static final String P = "spring.rabbitmq.";
  private static final int PORT = 5672;
  private static final int TLS_PORT = 5671;

  /**
   * {@code spring.rabbitmq.ssl.*}.
   *
   * @param bundle the SSL bundle's name (blank: none)
   * @param keyStore key store location, type, password (blank location: none)
   * @param trustStore trust store location, type, password (blank location: none)
   * @param algorithm the SSL protocol (blank: TLS)
   * @param verifyHostname {@code verify-hostname}
   * @param validateServerCertificate {@code validate-server-certificate}
   */
  record Ssl(
      String bundle,
      JksSslStoreDetails keyStore,
      JksSslStoreDetails trustStore,
      String algorithm,
      boolean verifyHostname,
      boolean validateServerCertificate) {
    static final Ssl NONE =
        new Ssl(
            "",
            new JksSslStoreDetails(null, null, null, null),
            new JksSslStoreDetails(null, null, null, null),
            "",
            true,
            true);
  }

  /** The settings {@code spring.rabbitmq.*} gives. */
  static RabbitClientSettings fromSpring(Environment environment) {
    Binder b = Binder.get(environment);
    String host = b.bind(P + "host", String.class).orElse("");
    List<String> listed = b.bind(P + "addresses", Bindable.listOf(String.class)).orElse(List.of());
    Ssl ssl =
        new Ssl(
            b.bind(P + "ssl.bundle", String.class).orElse(""),
            new JksSslStoreDetails(
                b.bind(P + "ssl.key-store-type", String.class).orElse("PKCS12"),
                null,
                b.bind(P + "ssl.key-store", String.class).orElse(null),
                b.bind(P + "ssl.key-store-password", String.class).orElse(null)),
            new JksSslStoreDetails(
                b.bind(P + "ssl.trust-store-type", String.class).orElse("JKS"),
                null,
                b.bind(P + "ssl.trust-store", String.class).orElse(null),
                b.bind(P + "ssl.trust-store-password", String.class).orElse(null)),
            b.bind(P + "ssl.algorithm", String.class).orElse(""),
            b.bind(P + "ssl.verify-hostname", Boolean.class).orElse(true),
            b.bind(P + "ssl.validate-server-certificate", Boolean.class).orElse(true));
    Optional<Boolean> enabled =
        b.bind(P + "ssl.enabled", Boolean.class).map(Optional::of).orElse(Optional.empty());
    String username = b.bind(P + "username", String.class).orElse("guest");
    String password = b.bind(P + "password", String.class).orElse("guest");
    String vhost = b.bind(P + "virtual-host", String.class).orElse("/");
    List<String> addresses = new ArrayList<>();
    boolean amqps = false;
    for (String a : listed) {
      Address parsed = Address.parse(a);
      amqps |= parsed.amqps();
      if (addresses.isEmpty()) {
        // the first address's credentials and vhost, as Spring Boot's connection factory takes them
        username = parsed.username().orElse(username);
        password = parsed.password().orElse(password);
        vhost = parsed.vhost().orElse(vhost);
      }
      addresses.add(parsed.hostPort());
    }
    boolean tls = enabled.orElse(!ssl.bundle().isBlank() || amqps);
    if (host.isBlank() && addresses.isEmpty()) {
      return new RabbitClientSettings("", List.of(), tls, ssl);
    }
    int defaultPort = tls ? TLS_PORT : PORT;
    String first;
    if (addresses.isEmpty()) {
      first = host + ":" + b.bind(P + "port", Integer.class).orElse(defaultPort);
    } else {
      first = withPort(addresses.get(0), defaultPort);
      addresses.replaceAll(a -> withPort(a, defaultPort));
    }
    String uri =
        "amqp://" + encode(username) + ":" + encode(password) + "@" + first + "/" + encode(vhost);
    return new RabbitClientSettings(
        uri, addresses.size() > 1 ? List.copyOf(addresses) : List.of(), tls, ssl);
  }

  /** These settings without the broker's URI and addresses (postbox.rabbitmq.uri names it). */
  RabbitClientSettings withoutAddresses() {
    return new RabbitClientSettings("", List.of(), tls, ssl);
  }

  /**
   * The problems of the TLS settings Postbox cannot honour: its clients always check the broker's
   * certificate and host name.
   */
  List<String> problems() {
    List<String> out = new ArrayList<>();
    if (tls && !ssl.validateServerCertificate()) {
      out.add(
          "spring.rabbitmq.ssl.validate-server-certificate: false is not honoured by Postbox's"
              + " RabbitMQ clients, which always check the broker's certificate (give them the"
              + " broker's certificate in a trust store or an SSL bundle)");
    }
    if (tls && !ssl.verifyHostname()) {
      out.add(
          "spring.rabbitmq.ssl.verify-hostname: false is not honoured by Postbox's RabbitMQ"
              + " clients, which always verify the broker's host name");
    }
    return out;
  }

  /**
   * The TLS context of Postbox's RabbitMQ clients, when TLS is on: the SSL bundle's (from {@code
   * bundles}), else one of the key and trust stores, else the JVM's default.
   *
   * @throws PostboxConfigurationException if the bundle is not there or a store cannot be read
   */
  Optional<SSLContext> sslContext(Optional<SslBundles> bundles) {
    if (!tls) {
      return Optional.empty();
    }
    try {
      if (!ssl.bundle().isBlank()) {
        SslBundles all =
            bundles.orElseThrow(() -> new NoSuchSslBundleException(ssl.bundle(), "no SslBundles"));
        return Optional.of(all.getBundle(ssl.bundle()).createSslContext());
      }
      if (ssl.keyStore().location() != null || ssl.trustStore().location() != null) {
        JksSslStoreBundle stores =
            new JksSslStoreBundle(
                ssl.keyStore().location() == null ? null : ssl.keyStore(),
                ssl.trustStore().location() == null ? null : ssl.trustStore());
        SslBundle bundle =
            ssl.algorithm().isBlank()
                ? SslBundle.of(stores)
                : SslBundle.of(stores, null, null, ssl.algorithm());
        return Optional.of(bundle.createSslContext());
      }
      return Optional.of(SSLContext.getDefault());
    } catch (NoSuchSslBundleException e) {
      throw new PostboxConfigurationException(
          List.of(
              "spring.rabbitmq.ssl.bundle: no SSL bundle named '"
                  + ssl.bundle()
                  + "' (spring.ssl.bundle.*)"));
    } catch (NoSuchAlgorithmException | RuntimeException e) {
      throw new PostboxConfigurationException(
          List.of("spring.rabbitmq.ssl: cannot make the TLS context: " + e.getMessage()));
    }
  }

  private static String withPort(String hostPort, int defaultPort) {
    return hostPort.matches(".*:\\d+$") && !hostPort.endsWith("]")
        ? hostPort
        : hostPort + ":" + defaultPort;
  }

  private static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /** One entry of {@code spring.rabbitmq.addresses}. */
  private record Address(
      String hostPort,
      boolean amqps,
      Optional<String> username,
      Optional<String> password,
      Optional<String> vhost) {

    static Address parse(String entry) {
      String e = entry.strip();
      if (!e.contains("://")) {
        return new Address(e, false, Optional.empty(), Optional.empty(), Optional.empty());
      }
      URI u;
      try {
        u = URI.create(e);
      } catch (IllegalArgumentException x) {
        throw new PostboxConfigurationException(
            List.of("spring.rabbitmq.addresses: '" + entry + "' is not an address"));
      }
      String scheme = String.valueOf(u.getScheme());
      if (!scheme.equals("amqp") && !scheme.equals("amqps")) {
        throw new PostboxConfigurationException(
            List.of("spring.rabbitmq.addresses: '" + entry + "' is not amqp:// or amqps://"));
      }
      Optional<String> user = Optional.empty();
      Optional<String> pass = Optional.empty();
      if (u.getUserInfo() != null) {
        String[] parts = u.getUserInfo().split(":", 2);
        user = Optional.of(parts[0]);
        pass = parts.length > 1 ? Optional.of(parts[1]) : Optional.empty();
      }
      String path = u.getPath() == null ? "" : u.getPath();
      Optional<String> vhost =
          path.isEmpty() || path.equals("/") ? Optional.empty() : Optional.of(path.substring(1));
      String hostPort = u.getHost() + (u.getPort() < 0 ? "" : ":" + u.getPort());
      return new Address(hostPort, scheme.equals("amqps"), user, pass, vhost);
    }
  }
}
