package dev.postbox.core.consumer;

import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.codec.Decoded;
import java.sql.Connection;
import java.util.Optional;

/**
 * One message as a handler receives it: the message, where it came from, which attempt this is,
 * and, for an {@code EFFECTIVELY_ONCE} subscription, the connection of the transaction that also
 * records the message id.
 *
 * <p>Valid only during the handler call, on the handler's thread.
 */
public interface Delivery {

  /** The message. */
  Message message();

  /** The topic it was read from. */
  String topic();

  /** The partition it was read from. */
  int partition();

  /** Its offset in the partition. */
  long offset();

  /** 1 for the first attempt, then 2, 3... for in-place retries. */
  int attempt();

  /**
   * The connection of the inbox transaction ({@code EFFECTIVELY_ONCE} only): do the effect on it,
   * and do not commit, roll back or close it. Empty for the other guarantees.
   */
  Optional<Connection> connection();

  /**
   * The payload decoded with the subscription's {@code EventTypes} (upcast to the current version).
   *
   * @throws IllegalStateException if the subscription has no event types
   * @throws dev.postbox.core.DecodingException if the payload cannot be decoded (a permanent
   *     failure)
   */
  Decoded<Object> decoded();

  /** The decoded event as {@code type}. */
  default <T> T event(Class<T> type) {
    if (decoded() instanceof Decoded.Event<Object> e) {
      return type.cast(e.value());
    }
    throw new IllegalStateException("message type " + message().type() + " is not registered");
  }

  /**
   * Records {@code version} as the latest version of {@code entity} in this delivery's transaction,
   * if it is newer than the stored one. Returns {@code false} for an event that is older than (or
   * as old as) the stored state: skip its effect, it is counted as stale. {@code EFFECTIVELY_ONCE}
   * only.
   */
  boolean advanceVersion(String entity, long version);

  /**
   * Records the result of the effect (business-level idempotency), for {@code EFFECTIVELY_ONCE} and
   * {@code DEDUPLICATED}; the last call wins, and without a call nothing is stored.
   *
   * <ul>
   *   <li>{@code EFFECTIVELY_ONCE}: stored on the message's inbox row in the effect's transaction
   *       (so it commits with the effect or not at all); the handler's {@link
   *       MessageHandler#completed} hears it after the commit, and again for every later duplicate
   *       of the id (which does not run the effect). Not in a {@link BatchHandler}'s deliveries.
   *   <li>{@code DEDUPLICATED}: stored with the message id when the handler returns and given to
   *       the subscriber's {@link DuplicateListener} for every later duplicate; the idempotency
   *       store keeps the bytes only, not the content type.
   * </ul>
   *
   * @throws IllegalStateException for the other guarantees, and in a batch
   */
  default void recordResult(Payload result) {
    throw new IllegalStateException(
        "recordResult needs an EFFECTIVELY_ONCE or DEDUPLICATED subscription");
  }

  /** {@link #recordResult(Payload)} of {@code result} as {@code application/octet-stream}. */
  default void recordResult(byte[] result) {
    recordResult(Payload.of(result));
  }

  /** {@link #recordResult(byte[])} of {@code result} in UTF-8. */
  default void recordResult(String result) {
    recordResult(result.getBytes(java.nio.charset.StandardCharsets.UTF_8));
  }
}
