package dev.postbox.core;

import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.UUID;

/**
 * Stable idempotency keys for outside systems (an HTTP API's {@code Idempotency-Key} header, a
 * payment provider's request id), derived from the message id: every redelivery of a message, on
 * any instance, after any crash, sends the same key, so the outside system can dedupe too. That
 * closes the at-risk window of {@link DeliveryGuarantee#DEDUPLICATED} at the target, for the
 * targets that honour such a key.
 */
public final class IdempotencyKeys {

  private IdempotencyKeys() {}

  /** The message id itself, as text: one key per message. */
  public static String of(Message message) {
    return message.id().toString();
  }

  /**
   * A key for one of several outside calls that one message makes ({@code scope} names the call,
   * for example {@code "charge"} or {@code "email"}): a name-based UUID of the scope and the
   * message id, so each call has its own stable key.
   */
  public static String of(String scope, Message message) {
    Objects.requireNonNull(scope, "scope");
    if (scope.isBlank()) {
      throw new IllegalArgumentException("scope must not be blank");
    }
    return UUID.nameUUIDFromBytes((scope + "\n" + message.id()).getBytes(StandardCharsets.UTF_8))
        .toString();
  }
}
