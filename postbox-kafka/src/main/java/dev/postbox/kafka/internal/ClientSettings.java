package dev.postbox.kafka.internal;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Kafka client settings as the builders collect them: validated bootstrap, user overrides, fixed
 * keys.
 */
public final class ClientSettings {

  private final Map<String, Object> config = new HashMap<>();
  private Map<String, Object> security = Map.of();

  /** Settings for the cluster at {@code bootstrapServers} (must not be blank). */
  public ClientSettings(String bootstrapServers) {
    Objects.requireNonNull(bootstrapServers, "bootstrapServers");
    if (bootstrapServers.isBlank()) {
      throw new IllegalArgumentException("bootstrapServers must not be blank");
    }
    config.put("bootstrap.servers", bootstrapServers);
  }

  /** Sets a property (a default or a user override). */
  public ClientSettings put(String name, Object value) {
    config.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
    return this;
  }

  /**
   * Sets the security properties (from {@code KafkaSecurity}); {@link #build} fails if any of them
   * was also set with {@link #put}.
   */
  public ClientSettings security(Map<String, Object> properties) {
    this.security = Map.copyOf(properties);
    return this;
  }

  /** Fails if a property of {@code security} was also set in {@code config}; else merges them. */
  public static Map<String, Object> withSecurity(
      Map<String, Object> config, Map<String, Object> security) {
    for (String name : security.keySet()) {
      if (config.containsKey(name)) {
        throw new IllegalArgumentException(
            name + " is set both by security(...) and as a client property: use one of the two");
      }
    }
    Map<String, Object> out = new HashMap<>(config);
    out.putAll(security);
    return out;
  }

  /** The current value of a property, if set. */
  public Object get(String name) {
    return config.get(name);
  }

  /**
   * Fails if the user set any of {@code fixed}, which the component decides itself ({@code why}
   * says how), then returns a copy with {@code enforced} applied.
   */
  public Map<String, Object> build(
      Collection<String> fixed, Map<String, Object> enforced, String why) {
    for (String name : fixed) {
      if (config.containsKey(name)) {
        throw new IllegalArgumentException(name + " is fixed (" + why + ") and cannot be set");
      }
    }
    Map<String, Object> out = withSecurity(config, security);
    out.putAll(enforced);
    return out;
  }
}
