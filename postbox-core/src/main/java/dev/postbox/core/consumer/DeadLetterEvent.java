package dev.postbox.core.consumer;

import java.util.Objects;

/**
 * A message given up by a {@link FailureHandlers} handler, as passed to its {@code onDeadLetter}
 * listener (on the handler's thread). The delivery is valid only during the listener call.
 *
 * @param delivery the delivery of the last attempt ({@link Delivery#attempt()} counts all attempts
 *     the runtime made, open-circuit ones included)
 * @param error what the last attempt failed with
 * @param reason why it was given up, for people
 * @param failureClass {@code PERMANENT} if never worth retrying, {@code TRANSIENT} if the retries
 *     ran out
 */
public record DeadLetterEvent(
    Delivery delivery, Throwable error, String reason, FailureClass failureClass) {

  public DeadLetterEvent {
    Objects.requireNonNull(delivery, "delivery");
    Objects.requireNonNull(error, "error");
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(failureClass, "failureClass");
  }
}
