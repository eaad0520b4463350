package dev.postbox.testkit;

import java.nio.file.Path;
import java.util.Map;

/**
 * The SASL_SSL listener of an embedded {@link KafkaBroker} started with {@link
 * KafkaBroker.Builder#saslSsl}: TLS with a throwaway self-signed certificate, SCRAM-SHA-512
 * authentication of one user.
 *
 * @param bootstrapServers {@code host:port} of the listener
 * @param username the SCRAM user created at the broker's first start
 * @param password its password
 * @param trustStore a PKCS#12 trust store holding the broker's certificate
 * @param trustStorePassword the trust store's password
 */
public record KafkaSaslSslListener(
    String bootstrapServers,
    String username,
    String password,
    Path trustStore,
    String trustStorePassword) {

  /** Plain Kafka client properties for this listener (for clients other than Postbox's). */
  public Map<String, Object> clientProperties() {
    return Map.of(
        "bootstrap.servers",
        bootstrapServers,
        "security.protocol",
        "SASL_SSL",
        "sasl.mechanism",
        "SCRAM-SHA-512",
        "sasl.jaas.config",
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + username
            + "\" password=\""
            + password
            + "\";",
        "ssl.truststore.location",
        trustStore.toString(),
        "ssl.truststore.password",
        trustStorePassword,
        "ssl.truststore.type",
        "PKCS12");
  }

  @Override
  public String toString() {
    return "KafkaSaslSslListener[" + bootstrapServers + ", user " + username + "]";
  }
}
