package dev.postbox.core.spi;

import dev.postbox.core.Message;
import java.time.Instant;
import java.util.Objects;

/**
 * A pending outbox row as the relay sees it.
 *
 * @param position the row's position (assigned at insert; per key, position order is commit order)
 * @param lane the lane the row belongs to ({@code hash(key) mod lanes})
 * @param message the message to publish; for an {@linkplain #unreadable() unreadable} row, a
 *     stand-in with the row's topic and key as far as they could be read, never published
 * @param createdAt when the row was inserted (database clock)
 * @param attempts how many publish attempts failed before
 * @param unreadable why the store could not read the row into a message (a column the envelope
 *     rejects, corrupt headers), or null for a readable row; the relay never sends an unreadable
 *     row and treats it as unpublishable
 */
public record OutboxRecord(
    long position, int lane, Message message, Instant createdAt, int attempts, String unreadable) {
  public OutboxRecord {
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(createdAt, "createdAt");
  }

  /** A readable row. */
  public OutboxRecord(long position, int lane, Message message, Instant createdAt, int attempts) {
    this(position, lane, message, createdAt, attempts, null);
  }

  /** Whether the store could read the row into a message. */
  public boolean readable() {
    return unreadable == null;
  }
}
