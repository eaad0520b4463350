package dev.postbox.core.spi;

import dev.postbox.core.Message;
import java.time.Instant;
import java.util.Objects;

/**
 * A pending outbox row as the relay sees it.
 *
 * @param position the row's position (assigned at insert; per key, position order is commit order)
 * @param lane the lane the row belongs to ({@code hash(key) mod lanes})
 * @param message the message to publish
 * @param createdAt when the row was inserted (database clock)
 * @param attempts how many publish attempts failed before
 */
public record OutboxRecord(
    long position, int lane, Message message, Instant createdAt, int attempts) {
  public OutboxRecord {
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(createdAt, "createdAt");
  }
}
