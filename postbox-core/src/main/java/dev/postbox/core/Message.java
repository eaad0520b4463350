package dev.postbox.core;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * The Postbox envelope: one event or command on its way to a topic.
 *
 * <p>The {@link #id()} (a UUIDv7) is generated once, when the producer builds the message, and
 * never changes: the outbox stores it, the relay publishes it (as often as it must), consumers
 * deduplicate on it. The {@link #key()} is the ordering key (usually the aggregate id): messages
 * with the same key are delivered in the order their transactions committed. On Kafka the message
 * travels in CloudEvents binary mode ({@code ce_*} headers, Kafka key = ordering key).
 *
 * <p>Build one with {@link #builder(String, String)}; the builder validates at {@link
 * Builder#build()} and fills the defaults: a new id, {@code schemaVersion} 1, {@code occurredAt}
 * now, {@code source} {@value #DEFAULT_SOURCE}, no key, no headers, an empty payload. Immutable and
 * thread-safe.
 *
 * @param id unique id, stable across retries (UUIDv7 by default)
 * @param topic destination topic
 * @param type event type, for example {@code order.created}
 * @param schemaVersion version of the payload schema for {@code type}, starting at 1
 * @param key ordering key (aggregate id); empty for messages that need no order
 * @param occurredAt when the event happened (kept to the microsecond)
 * @param source the producing service (CloudEvents {@code source}), a URI reference (checked, so
 *     that every message is a valid CloudEvent), for example {@code /orders} or {@code
 *     urn:acme:orders}
 * @param correlationId id shared by all messages of one conversation or request
 * @param causationId id of the message that caused this one
 * @param tenant tenant the message belongs to
 * @param headers extra application headers (names must not start with {@code ce_} or {@code pb_})
 * @param payload the body
 */
public record Message(
    UUID id,
    String topic,
    String type,
    int schemaVersion,
    Optional<String> key,
    Instant occurredAt,
    String source,
    Optional<String> correlationId,
    Optional<String> causationId,
    Optional<String> tenant,
    Map<String, String> headers,
    Payload payload) {

  /** The {@code source} used when none is set. */
  public static final String DEFAULT_SOURCE = "/postbox";

  public Message {
    Objects.requireNonNull(id, "id");
    requireText(topic, "topic");
    if (!legalTopic(topic) || topic.equals(".") || topic.equals("..")) {
      throw new IllegalArgumentException(
          "topic '" + topic + "' is not a legal topic name (1-249 of [a-zA-Z0-9._-])");
    }
    requireText(type, "type");
    if (schemaVersion < 1) {
      throw new IllegalArgumentException("schemaVersion must be >= 1, was " + schemaVersion);
    }
    Objects.requireNonNull(key, "key");
    // Microseconds: what PostgreSQL stores, so a message read back from the outbox equals the one
    // written.
    occurredAt = Objects.requireNonNull(occurredAt, "occurredAt").truncatedTo(ChronoUnit.MICROS);
    requireText(source, "source");
    requireUriReference(source);
    Objects.requireNonNull(correlationId, "correlationId");
    Objects.requireNonNull(causationId, "causationId");
    Objects.requireNonNull(tenant, "tenant");
    Objects.requireNonNull(headers, "headers");
    for (var e : headers.entrySet()) {
      validateHeader(e.getKey(), e.getValue());
    }
    headers = Map.copyOf(headers);
    Objects.requireNonNull(payload, "payload");
  }

  /** A builder for a message of {@code type} to {@code topic}. */
  public static Builder builder(String topic, String type) {
    return new Builder(topic, type);
  }

  /**
   * A builder that starts from this message (same id): for changing a field, not for a new event.
   */
  public Builder toBuilder() {
    Builder b = new Builder(topic, type);
    b.id = id;
    b.schemaVersion = schemaVersion;
    b.key = key.orElse(null);
    b.occurredAt = occurredAt;
    b.source = source;
    b.correlationId = correlationId.orElse(null);
    b.causationId = causationId.orElse(null);
    b.tenant = tenant.orElse(null);
    b.headers.putAll(headers);
    b.payload = payload;
    return b;
  }

  /** The header value for {@code name}, if present. */
  public Optional<String> header(String name) {
    return Optional.ofNullable(headers.get(name));
  }

  private static void requireText(String value, String name) {
    Objects.requireNonNull(value, name);
    if (value.isBlank()) {
      throw new IllegalArgumentException(name + " must not be blank");
    }
  }

  /**
   * Whether {@code topic} is 1-249 of {@code [a-zA-Z0-9._-]}: checked by hand, as this runs for
   * every message a consumer decodes (a regular expression was 3.5% of a batch consumer's CPU).
   */
  private static boolean legalTopic(String topic) {
    int n = topic.length();
    if (n < 1 || n > 249) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      char c = topic.charAt(i);
      boolean ok =
          (c >= 'a' && c <= 'z')
              || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9')
              || c == '.'
              || c == '_'
              || c == '-';
      if (!ok) {
        return false;
      }
    }
    return true;
  }

  /**
   * The source last found to be a URI reference. Every consumed record becomes a message, and its
   * source repeats (one per producing service); parsing it with {@link URI} was about 5% of the
   * batch consumer's worker time in a profile of the batch race (2026-12-03). A plain volatile
   * field: a source that alternates with another is parsed again, which is only slower.
   */
  private static volatile String lastUriReference;

  private static void requireUriReference(String source) {
    if (source.equals(lastUriReference)) {
      return;
    }
    try {
      new URI(source);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException(
          "source '" + source + "' is not a URI reference: " + e.getReason());
    }
    lastUriReference = source;
  }

  private static void validateHeader(String name, String value) {
    requireText(name, "header name");
    Objects.requireNonNull(value, () -> "value of header " + name);
    String lower = name.toLowerCase(Locale.ROOT);
    if (lower.startsWith("ce_") || lower.startsWith("pb_") || lower.equals("content-type")) {
      throw new IllegalArgumentException(
          "header name '"
              + name
              + "' is reserved (ce_*, pb_* and content-type belong to the envelope)");
    }
  }

  /**
   * Builds a {@link Message}; validates at {@link #build()}. Not thread-safe; build one message per
   * builder.
   */
  public static final class Builder {
    private final String topic;
    private final String type;
    private UUID id;
    private int schemaVersion = 1;
    private String key;
    private Instant occurredAt;
    private Clock clock = Clock.systemUTC();
    private String source = DEFAULT_SOURCE;
    private String correlationId;
    private String causationId;
    private String tenant;
    private final Map<String, String> headers = new LinkedHashMap<>();
    private Payload payload = Payload.empty();

    private Builder(String topic, String type) {
      this.topic = topic;
      this.type = type;
    }

    /** Sets the id; by default a new UUIDv7 is generated at {@link #build()}. */
    public Builder id(UUID id) {
      this.id = Objects.requireNonNull(id, "id");
      return this;
    }

    /** Sets the schema version of the payload (default 1). */
    public Builder schemaVersion(int schemaVersion) {
      this.schemaVersion = schemaVersion;
      return this;
    }

    /** Sets the ordering key (aggregate id); {@code null} means unordered. */
    public Builder key(String key) {
      if (key != null && key.isEmpty()) {
        throw new IllegalArgumentException("key must not be empty; leave it unset for no key");
      }
      this.key = key;
      return this;
    }

    /** Sets when the event happened (default: now on the builder's clock). */
    public Builder occurredAt(Instant occurredAt) {
      this.occurredAt = Objects.requireNonNull(occurredAt, "occurredAt");
      return this;
    }

    /** Sets the clock used for the default {@code occurredAt} (default: system UTC). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** Sets the producing service as a URI reference (default {@value Message#DEFAULT_SOURCE}). */
    public Builder source(String source) {
      this.source = source;
      return this;
    }

    /** Sets the correlation id. */
    public Builder correlationId(String correlationId) {
      this.correlationId = correlationId;
      return this;
    }

    /** Sets the causation id (the id of the message that caused this one). */
    public Builder causationId(String causationId) {
      this.causationId = causationId;
      return this;
    }

    /** Sets correlation and causation from the message this one answers or follows. */
    public Builder causedBy(Message cause) {
      this.causationId = cause.id().toString();
      this.correlationId = cause.correlationId().orElse(cause.id().toString());
      if (tenant == null) {
        this.tenant = cause.tenant().orElse(null);
      }
      return this;
    }

    /** Sets the tenant. */
    public Builder tenant(String tenant) {
      this.tenant = tenant;
      return this;
    }

    /** Adds an application header. */
    public Builder header(String name, String value) {
      validateHeader(name, value);
      headers.put(name, value);
      return this;
    }

    /** Sets the payload (default: empty). */
    public Builder payload(Payload payload) {
      this.payload = Objects.requireNonNull(payload, "payload");
      return this;
    }

    /** Sets a JSON payload from JSON text. */
    public Builder jsonPayload(String json) {
      return payload(Payload.json(json));
    }

    /** Validates and builds the message. */
    public Message build() {
      return new Message(
          id != null ? id : MessageId.next(),
          topic,
          type,
          schemaVersion,
          Optional.ofNullable(key),
          occurredAt != null ? occurredAt : clock.instant(),
          source,
          Optional.ofNullable(correlationId),
          Optional.ofNullable(causationId),
          Optional.ofNullable(tenant),
          headers,
          payload);
    }
  }
}
