package dev.postbox.core.codec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Objects;

/**
 * Turns the JSON payload of one schema version of an event type into the next version: registered
 * with {@link EventTypes.Builder#upcaster(String, int, Upcaster)} for version {@code N}, it
 * receives a version {@code N} tree and returns the version {@code N + 1} tree. {@link EventTypes}
 * chains upcasters (v1 to v2 to v3 ...) until the registered current version, then binds the tree
 * to the registered class.
 *
 * <p>The tree is parsed fresh for every message and owned by the chain: an upcaster may modify its
 * argument in place and return it, or return a new tree. Object payloads arrive as {@link
 * ObjectNode}; see {@link #objects(ObjectUpcaster)}. An upcaster that throws, or returns {@code
 * null}, makes decoding fail with a permanent {@link dev.postbox.core.DecodingException}.
 *
 * <p>Implementations must be thread-safe (stateless in practice): one instance serves all consumer
 * threads.
 */
@FunctionalInterface
public interface Upcaster {

  /** Returns the payload of version {@code N + 1}, given the payload of version {@code N}. */
  JsonNode upcast(JsonNode payload);

  /**
   * An upcaster for payloads that are JSON objects; any other payload (array, number, ...) fails
   * decoding with a clear message instead of a {@link ClassCastException}.
   */
  static Upcaster objects(ObjectUpcaster upcaster) {
    Objects.requireNonNull(upcaster, "upcaster");
    return payload -> {
      if (!(payload instanceof ObjectNode object)) {
        throw new IllegalArgumentException(
            "expected a JSON object to upcast, got " + payload.getNodeType());
      }
      return upcaster.upcast(object);
    };
  }

  /** An {@link Upcaster} of JSON objects; see {@link Upcaster#objects(ObjectUpcaster)}. */
  @FunctionalInterface
  interface ObjectUpcaster {
    /** Returns the payload of version {@code N + 1}, given the object of version {@code N}. */
    JsonNode upcast(ObjectNode payload);
  }
}
