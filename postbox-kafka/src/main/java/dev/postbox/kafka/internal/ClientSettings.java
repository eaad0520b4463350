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

  /**
   * {@code metadata.max.age.ms} for every Kafka client Postbox makes (Kafka's default: 5 minutes).
   * A partition leader cut off from the other brokers while its clients still reach it goes on
   * answering them as the leader: a producer's write gets {@code REQUEST_TIMED_OUT} after the
   * request timeout (the leader cannot reach its followers) and a consumer's fetch gets nothing.
   * Kafka's clients retry such a leader without asking for new metadata, so they wait for the next
   * metadata refresh, although another broker leads the partition seconds after the cut. With 10 s
   * (below the 30 s request timeout), a relay's retry goes to the new leader after one request
   * timeout and a subscriber fetches from it within seconds.
   */
  public static final int METADATA_MAX_AGE_MS = 10_000;

  private final Map<String, Object> config = new HashMap<>();
  private Map<String, Object> security = Map.of();

  /** Settings for the cluster at {@code bootstrapServers} (must not be blank). */
  public ClientSettings(String bootstrapServers) {
    Objects.requireNonNull(bootstrapServers, "bootstrapServers");
    if (bootstrapServers.isBlank()) {
      throw new IllegalArgumentException("bootstrapServers must not be blank");
    }
    config.put("bootstrap.servers", bootstrapServers);
    config.put("metadata.max.age.ms", METADATA_MAX_AGE_MS);
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
