package dev.postbox.core.codec;

import com.fasterxml.jackson.databind.JsonNode;
import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * The registry of event types a service produces or consumes: each type name has one current schema
 * version and the Java class of that version, plus the {@link Upcaster}s that bring older versions
 * up to it.
 *
 * <pre>{@code
 * EventTypes types = EventTypes.builder()
 *     .register("payment.received", 2, PaymentReceived.class)
 *     .upcaster("payment.received", 1, Upcaster.objects(v1 -> ...)) // v1 -> v2
 *     .build();
 *
 * Message out = types.newMessage("payments", new PaymentReceived(...)).key(accountId).build();
 * switch (types.decode(in)) { ... }
 * }</pre>
 *
 * <p>{@link #decode(Message)} of a message whose type is
 *
 * <ul>
 *   <li>registered, at the current version: binds the JSON payload to the class;
 *   <li>registered, at an older version: parses the payload into a tree, applies the upcasters from
 *       the message's version to the current one, then binds;
 *   <li>not registered: returns {@link Decoded.UnknownType} without reading the payload, so that
 *       consumers can skip and count it.
 * </ul>
 *
 * It throws {@link DecodingException} (a {@link dev.postbox.core.PermanentMessageException}) when
 * the version is newer than the current one (a producer deployed ahead of this consumer), when an
 * older version has no complete upcaster path, when the payload is not JSON by content type or by
 * content, does not fit the class, or when an upcaster fails.
 *
 * <p>Build one with {@link #builder()}; the default codec is {@link JsonCodec#create()}. Immutable
 * and thread-safe once built (provided the upcasters are, as they must be).
 */
public final class EventTypes {

  /**
   * One registered event type.
   *
   * @param type the event type name, as in {@link Message#type()}
   * @param version the current schema version, at least 1
   * @param javaClass the class that version decodes into and encodes from
   */
  public record Registration(String type, int version, Class<?> javaClass) {
    public Registration {
      Objects.requireNonNull(type, "type");
      Objects.requireNonNull(javaClass, "javaClass");
      if (version < 1) {
        throw new IllegalArgumentException("version must be >= 1, was " + version);
      }
    }
  }

  private final JsonCodec codec;
  private final Map<String, Registration> byType;
  private final Map<Class<?>, Registration> byClass;
  // type -> upcasters indexed by from-version (null where there is none)
  private final Map<String, Upcaster[]> upcasters;

  private EventTypes(
      JsonCodec codec,
      Map<String, Registration> byType,
      Map<Class<?>, Registration> byClass,
      Map<String, Upcaster[]> upcasters) {
    this.codec = codec;
    this.byType = Map.copyOf(byType);
    this.byClass = Map.copyOf(byClass);
    this.upcasters = Map.copyOf(upcasters);
  }

  /** A builder with no types and the default {@link JsonCodec}. */
  public static Builder builder() {
    return new Builder();
  }

  /** The registration of {@code type}, if registered. */
  public Optional<Registration> find(String type) {
    return Optional.ofNullable(byType.get(type));
  }

  /** The registration whose class is exactly {@code javaClass}, if any. */
  public Optional<Registration> find(Class<?> javaClass) {
    return Optional.ofNullable(byClass.get(javaClass));
  }

  /** The registered type names. */
  public Set<String> types() {
    return byType.keySet();
  }

  /** The codec used for payloads. */
  public JsonCodec codec() {
    return codec;
  }

  /**
   * A message builder for {@code event} to {@code topic}: type, schema version (the current one)
   * and JSON payload are set from the registration of the event's class; set key, correlation and
   * the rest on the builder.
   *
   * @throws IllegalArgumentException if the event's class is not registered
   * @throws EncodingException if the event cannot be encoded
   */
  public Message.Builder newMessage(String topic, Object event) {
    Objects.requireNonNull(event, "event");
    Registration r =
        find(event.getClass())
            .orElseThrow(() ->
                new IllegalArgumentException(
                    "class " + event.getClass().getName() + " is not registered as an event type"));
    return Message.builder(topic, r.type()).schemaVersion(r.version()).payload(codec.encode(event));
  }

  /**
   * Decodes the payload of {@code message} as described in the class documentation.
   *
   * @return the decoded event, or {@link Decoded.UnknownType} if the type is not registered
   * @throws DecodingException if the message is of a registered type but cannot be decoded
   */
  public Decoded<Object> decode(Message message) {
    Objects.requireNonNull(message, "message");
    Registration r = byType.get(message.type());
    if (r == null) {
      return new Decoded.UnknownType<>(message.type(), message.schemaVersion());
    }
    int version = message.schemaVersion();
    if (version > r.version()) {
      throw DecodingException.forMessage(
          message,
          "schema version "
              + version
              + " is newer than the current version "
              + r.version()
              + " known for this type",
          null);
    }
    Payload payload = message.payload();
    if (!JsonCodec.isJson(payload.contentType())) {
      throw DecodingException.forMessage(
          message,
          "content type (" + HeaderText.quote(payload.contentType()) + ") is not JSON",
          null);
    }
    Upcaster[] chain = upcasters.get(r.type());
    for (int v = version; v < r.version(); v++) {
      if (chain == null || chain[v] == null) {
        throw DecodingException.forMessage(
            message,
            "no upcaster from schema version "
                + v
                + " to "
                + (v + 1)
                + " (current version is "
                + r.version()
                + ")",
            null);
      }
    }
    byte[] raw = payload.unsafeBytes();
    try {
      Object value;
      if (version == r.version()) {
        value = codec.decode(raw, r.javaClass());
      } else {
        JsonNode tree = codec.readTree(raw);
        for (int v = version; v < r.version(); v++) {
          tree = upcast(message, chain[v], v, tree);
        }
        value = codec.treeToValue(tree, r.javaClass(), raw);
      }
      return new Decoded.Event<>(r.type(), r.version(), value);
    } catch (DecodingException e) {
      if (e.messageId().isPresent()) {
        throw e;
      }
      throw DecodingException.forMessage(message, e.reason(), e.getCause());
    } catch (RuntimeException e) {
      // the codec and upcasters classify their failures; anything else is a bug in them, but the
      // same bytes will fail again: permanent, never an unclassified exception (message not
      // copied, it may quote the payload)
      throw DecodingException.forMessage(
          message, "decoding failed unexpectedly: " + e.getClass().getName(), e);
    }
  }

  private static JsonNode upcast(Message message, Upcaster upcaster, int from, JsonNode tree) {
    JsonNode next;
    try {
      next = upcaster.upcast(tree);
    } catch (RuntimeException e) {
      throw DecodingException.forMessage(
          message, "upcaster from version " + from + " to " + (from + 1) + " failed: " + e, e);
    }
    if (next == null) {
      throw DecodingException.forMessage(
          message, "upcaster from version " + from + " to " + (from + 1) + " returned null", null);
    }
    return next;
  }

  /**
   * Builds {@link EventTypes}. Arguments are checked for {@code null} at once; everything else is
   * validated at {@link #build()}, which reports every problem in one {@link
   * IllegalArgumentException}: a blank type name, a version below 1, a type or a class registered
   * twice, an upcaster for an unregistered type, from a version below 1 or not below the current
   * one, registered twice, or a gap in a type's upcaster chain (upcasters must run without a hole
   * from the lowest one registered up to the current version; versions below the lowest one are
   * rejected when decoded). Not thread-safe.
   */
  public static final class Builder {
    private JsonCodec codec = JsonCodec.create();
    private final List<PendingRegistration> registrations = new ArrayList<>();
    private final List<PendingUpcaster> pending = new ArrayList<>();

    private record PendingRegistration(String type, int version, Class<?> javaClass) {}

    private record PendingUpcaster(String type, int from, Upcaster upcaster) {}

    private Builder() {}

    /** Sets the codec for payloads (default {@link JsonCodec#create()}). */
    public Builder codec(JsonCodec codec) {
      this.codec = Objects.requireNonNull(codec, "codec");
      return this;
    }

    /** Registers {@code type} with its current schema {@code version} and Java class. */
    public Builder register(String type, int version, Class<?> javaClass) {
      Objects.requireNonNull(type, "type");
      Objects.requireNonNull(javaClass, "javaClass");
      registrations.add(new PendingRegistration(type, version, javaClass));
      return this;
    }

    /**
     * Registers the upcaster that turns version {@code fromVersion} of {@code type} into version
     * {@code fromVersion + 1}.
     */
    public Builder upcaster(String type, int fromVersion, Upcaster upcaster) {
      Objects.requireNonNull(type, "type");
      Objects.requireNonNull(upcaster, "upcaster");
      pending.add(new PendingUpcaster(type, fromVersion, upcaster));
      return this;
    }

    /** Validates and builds the registry. */
    public EventTypes build() {
      List<String> problems = new ArrayList<>();
      Map<String, Registration> byType = new HashMap<>();
      Map<Class<?>, Registration> byClass = new HashMap<>();
      for (PendingRegistration p : registrations) {
        if (p.type().isBlank()) {
          problems.add("type name must not be blank (class " + p.javaClass().getName() + ")");
          continue;
        }
        if (p.version() < 1) {
          problems.add("type '" + p.type() + "': version must be >= 1, was " + p.version());
          continue;
        }
        Registration r = new Registration(p.type(), p.version(), p.javaClass());
        if (byType.putIfAbsent(r.type(), r) != null) {
          problems.add("type '" + r.type() + "' is registered twice");
          continue;
        }
        Registration other = byClass.putIfAbsent(r.javaClass(), r);
        if (other != null) {
          problems.add(
              "class "
                  + r.javaClass().getName()
                  + " is registered for both '"
                  + other.type()
                  + "' and '"
                  + r.type()
                  + "'");
        }
      }
      Map<String, Upcaster[]> upcasters = upcasterChains(byType, problems);
      if (!problems.isEmpty()) {
        throw new IllegalArgumentException("invalid event types: " + String.join("; ", problems));
      }
      return new EventTypes(codec, byType, byClass, upcasters);
    }

    /** Each type's upcasters indexed by the version they upcast from; problems are added. */
    private Map<String, Upcaster[]> upcasterChains(
        Map<String, Registration> byType, List<String> problems) {
      Map<String, TreeMap<Integer, Upcaster>> chains = new HashMap<>();
      for (PendingUpcaster u : pending) {
        Registration r = byType.get(u.type());
        if (r == null) {
          problems.add("upcaster for type '" + u.type() + "', which is not registered");
          continue;
        }
        if (u.from() < 1 || u.from() >= r.version()) {
          problems.add(
              "upcaster for type '"
                  + u.type()
                  + "' from version "
                  + u.from()
                  + ": must be from 1 to "
                  + (r.version() - 1)
                  + " (current version is "
                  + r.version()
                  + ")");
          continue;
        }
        if (chains
                .computeIfAbsent(u.type(), t -> new TreeMap<>())
                .putIfAbsent(u.from(), u.upcaster())
            != null) {
          problems.add(
              "upcaster for type '"
                  + u.type()
                  + "' from version "
                  + u.from()
                  + " is registered twice");
        }
      }
      Map<String, Upcaster[]> upcasters = new HashMap<>();
      for (var e : chains.entrySet()) {
        int current = byType.get(e.getKey()).version();
        TreeMap<Integer, Upcaster> chain = e.getValue();
        Upcaster[] array = new Upcaster[current];
        for (int v = chain.firstKey(); v < current; v++) {
          Upcaster u = chain.get(v);
          if (u == null) {
            problems.add(
                "type '"
                    + e.getKey()
                    + "': gap in upcaster chain, no upcaster from version "
                    + v
                    + " to "
                    + (v + 1));
          }
          array[v] = u;
        }
        upcasters.put(e.getKey(), array);
      }
      return upcasters;
    }
  }
}
