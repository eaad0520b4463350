package dev.postbox.spring;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;
import org.springframework.core.io.DefaultResourceLoader;
import org.springframework.core.io.Resource;

/**
 * The Kafka client settings the application already has for Spring Boot's own Kafka support, read
 * from {@code spring.kafka.*} so Postbox's clients (relay, listeners, at-most-once sender, admin
 * look-ups, lag probe) connect the same way: {@code bootstrap-servers} (when {@code
 * postbox.kafka.bootstrap-servers} is not set), {@code security.protocol}, {@code ssl.*} and {@code
 * properties.*} (where {@code sasl.mechanism} and {@code sasl.jaas.config} go). {@code
 * postbox.kafka.properties.*} then sets any client property for Postbox's clients only, over these.
 */
final class KafkaClientSettings {

  /** {@code spring.kafka.ssl.<key>} to the client property it stands for. */
  private static final Map<String, String> SSL =
      Map.ofEntries(
          Map.entry("key-password", "ssl.key.password"),
          Map.entry("key-store-location", "ssl.keystore.location"),
          Map.entry("key-store-password", "ssl.keystore.password"),
          Map.entry("key-store-type", "ssl.keystore.type"),
          Map.entry("key-store-certificate-chain", "ssl.keystore.certificate.chain"),
          Map.entry("key-store-key", "ssl.keystore.key"),
          Map.entry("trust-store-location", "ssl.truststore.location"),
          Map.entry("trust-store-password", "ssl.truststore.password"),
          Map.entry("trust-store-type", "ssl.truststore.type"),
          Map.entry("trust-store-certificates", "ssl.truststore.certificates"),
          Map.entry("protocol", "ssl.protocol"));

  private KafkaClientSettings() {}

  /** {@code spring.kafka.bootstrap-servers}, comma-separated; blank when not set. */
  static String springBootstrapServers(Environment environment) {
    return Binder.get(environment)
        .bind("spring.kafka.bootstrap-servers", Bindable.listOf(String.class))
        .map(servers -> String.join(",", servers))
        .orElse("");
  }

  /** The client properties {@code spring.kafka.*} sets (without the bootstrap servers). */
  static Map<String, Object> fromSpring(Environment environment) {
    Binder binder = Binder.get(environment);
    Map<String, Object> out = new LinkedHashMap<>();
    binder
        .bind("spring.kafka.security.protocol", String.class)
        .ifBound(p -> out.put("security.protocol", p));
    SSL.forEach((key, property) ->
        binder
            .bind("spring.kafka.ssl." + key, String.class)
            .ifBound(v -> out.put(property, key.endsWith("-location") ? path(v) : v)));
    binder
        .bind("spring.kafka.properties", Bindable.mapOf(String.class, String.class))
        .ifBound(out::putAll);
    return out;
  }

  /** A store's location as Spring writes it ({@code file:}, {@code classpath:}) as a file path. */
  private static String path(String location) {
    Resource resource = new DefaultResourceLoader().getResource(location);
    try {
      return resource.getFile().getAbsolutePath();
    } catch (IOException e) {
      throw new PostboxConfigurationException(
          List.of(
              "spring.kafka.ssl: the store '"
                  + location
                  + "' is not a file the Kafka client can read ("
                  + e.getMessage()
                  + ")"));
    }
  }
}
