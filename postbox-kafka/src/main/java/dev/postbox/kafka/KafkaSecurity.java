package dev.postbox.kafka;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * How a Postbox Kafka client authenticates and encrypts: SASL_SSL with SCRAM (TLS, then a SCRAM
 * login). Pass it to {@link KafkaRelayPublisher.Builder#security} or {@link
 * KafkaSubscriber.Builder#security}; the component then checks at start that the cluster accepts it
 * and fails with {@link KafkaAccessDeniedException} if not.
 *
 * <pre>{@code
 * KafkaSecurity security =
 *     KafkaSecurity.saslSsl("relay", password)            // SCRAM-SHA-512 by default
 *         .trustStore(Path.of("/etc/postbox/kafka-ca.p12"), trustStorePassword)
 *         .build();
 * }</pre>
 *
 * <p>Without a trust store the JDK's default trust store is used (a broker certificate signed by a
 * public CA). Hostname verification stays on unless turned off. {@link #toString()} never shows the
 * passwords. Immutable.
 */
public final class KafkaSecurity {

  /** The SCRAM mechanisms Kafka supports. */
  public enum Mechanism {
    /** {@code SCRAM-SHA-512} (the default). */
    SCRAM_SHA_512("SCRAM-SHA-512"),
    /** {@code SCRAM-SHA-256}. */
    SCRAM_SHA_256("SCRAM-SHA-256");

    private final String kafkaName;

    Mechanism(String kafkaName) {
      this.kafkaName = kafkaName;
    }

    /** The name in {@code sasl.mechanism}. */
    public String kafkaName() {
      return kafkaName;
    }
  }

  /** The client properties a {@link KafkaSecurity} sets; none of them may also be set directly. */
  static final java.util.Set<String> PROPERTIES =
      java.util.Set.of(
          "security.protocol",
          "sasl.mechanism",
          "sasl.jaas.config",
          "ssl.truststore.location",
          "ssl.truststore.password",
          "ssl.truststore.type",
          "ssl.endpoint.identification.algorithm");

  private final String username;
  private final Mechanism mechanism;
  private final Map<String, Object> properties;
  private final Optional<Path> trustStore;

  private KafkaSecurity(Builder b) {
    this.username = b.username;
    this.mechanism = b.mechanism;
    this.trustStore = Optional.ofNullable(b.trustStore);
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("security.protocol", "SASL_SSL");
    p.put("sasl.mechanism", b.mechanism.kafkaName());
    p.put(
        "sasl.jaas.config",
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + jaasEscape(b.username)
            + "\" password=\""
            + jaasEscape(b.password)
            + "\";");
    if (b.trustStore != null) {
      p.put("ssl.truststore.location", b.trustStore.toString());
      p.put("ssl.truststore.type", trustStoreType(b.trustStore));
      if (b.trustStorePassword != null) {
        p.put("ssl.truststore.password", b.trustStorePassword);
      }
    }
    p.put("ssl.endpoint.identification.algorithm", b.hostnameVerification ? "https" : "");
    this.properties = java.util.Collections.unmodifiableMap(p);
  }

  /** SASL_SSL with SCRAM (SHA-512 unless {@link Builder#mechanism} says otherwise). */
  public static Builder saslSsl(String username, String password) {
    return new Builder(username, password);
  }

  /** The Kafka client properties this setting stands for (contains the password). */
  public Map<String, Object> clientProperties() {
    return properties;
  }

  /** The SASL user. */
  public String username() {
    return username;
  }

  /** The SCRAM mechanism. */
  public Mechanism mechanism() {
    return mechanism;
  }

  /** The trust store, if one was given. */
  public Optional<Path> trustStore() {
    return trustStore;
  }

  @Override
  public String toString() {
    return "KafkaSecurity[SASL_SSL, "
        + mechanism.kafkaName()
        + ", user "
        + username
        + trustStore.map(t -> ", trust store " + t).orElse("")
        + "]";
  }

  private static String jaasEscape(String s) {
    return s.replace("\\", "\\\\").replace("\"", "\\\"");
  }

  private static String trustStoreType(Path p) {
    String name = p.getFileName().toString().toLowerCase(Locale.ROOT);
    if (name.endsWith(".jks")) {
      return "JKS";
    }
    if (name.endsWith(".pem") || name.endsWith(".crt")) {
      return "PEM";
    }
    return "PKCS12";
  }

  /** Collects a {@link KafkaSecurity}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final String username;
    private final String password;
    private Mechanism mechanism = Mechanism.SCRAM_SHA_512;
    private Path trustStore;
    private String trustStorePassword;
    private boolean hostnameVerification = true;

    private Builder(String username, String password) {
      this.username = Objects.requireNonNull(username, "username");
      this.password = Objects.requireNonNull(password, "password");
    }

    /** The SCRAM mechanism (default {@link Mechanism#SCRAM_SHA_512}). */
    public Builder mechanism(Mechanism mechanism) {
      this.mechanism = Objects.requireNonNull(mechanism, "mechanism");
      return this;
    }

    /**
     * The trust store holding the broker's CA certificate: PKCS#12 (default), JKS ({@code .jks}) or
     * PEM ({@code .pem}, {@code .crt}; no password). Must exist and be readable at {@link
     * #build()}.
     */
    public Builder trustStore(Path trustStore, String password) {
      this.trustStore = Objects.requireNonNull(trustStore, "trustStore");
      this.trustStorePassword = Objects.requireNonNull(password, "password");
      return this;
    }

    /** A PEM trust store, without a password. */
    public Builder trustStore(Path pemTrustStore) {
      this.trustStore = Objects.requireNonNull(pemTrustStore, "pemTrustStore");
      this.trustStorePassword = null;
      return this;
    }

    /**
     * Whether the broker's certificate must name the host the client connects to (default: true).
     * Turning it off lets any holder of a trusted certificate pose as the broker.
     */
    public Builder hostnameVerification(boolean verify) {
      this.hostnameVerification = verify;
      return this;
    }

    /** Validates and builds. */
    public KafkaSecurity build() {
      if (username.isBlank()) {
        throw new IllegalArgumentException("the SASL username must not be blank");
      }
      if (password.isEmpty()) {
        throw new IllegalArgumentException("the SASL password must not be empty");
      }
      if (trustStore != null) {
        if (!Files.isRegularFile(trustStore) || !Files.isReadable(trustStore)) {
          throw new IllegalArgumentException(
              "the trust store " + trustStore + " does not exist or cannot be read");
        }
        boolean pem = trustStoreType(trustStore).equals("PEM");
        if (!pem && (trustStorePassword == null || trustStorePassword.isEmpty())) {
          throw new IllegalArgumentException(
              "the trust store " + trustStore + " needs its password");
        }
        if (pem && trustStorePassword != null && !trustStorePassword.isEmpty()) {
          throw new IllegalArgumentException(
              "a PEM trust store has no password: use trustStore(Path)");
        }
      }
      return new KafkaSecurity(this);
    }
  }
}
