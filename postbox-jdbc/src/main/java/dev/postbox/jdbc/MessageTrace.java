package dev.postbox.jdbc;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * What the Postbox tables recorded about one message, as steps in time order: written to the
 * outbox, published (topic, partition, offset), failed and dead-lettered by a consumer, parked,
 * replayed or discarded, processed by each consumer's inbox. {@link MessageTracer} reads it.
 *
 * @param messageId the message
 * @param steps what happened, oldest first (ties in the order things happen to a message)
 * @param notes what the tables cannot tell (for example in-place retries of a message that then
 *     succeeded are counted in metrics, not recorded per message)
 */
public record MessageTrace(UUID messageId, List<Step> steps, List<String> notes) {

  public MessageTrace {
    Objects.requireNonNull(messageId, "messageId");
    steps = List.copyOf(steps);
    notes = List.copyOf(notes);
  }

  /** Whether the tables hold anything about the message. */
  public boolean found() {
    return !steps.isEmpty();
  }

  /**
   * One thing that happened to the message.
   *
   * @param at when (database clock)
   * @param step what: {@code occurred}, {@code written}, {@code published}, {@code publish-failed},
   *     {@code pending}, {@code failed}, {@code dead-lettered}, {@code parked}, {@code replayed},
   *     {@code discarded}, {@code processed}
   * @param by who: {@code outbox}, {@code relay}, or the consumer (group) name
   * @param detail a one-line description for people
   * @param attributes the recorded values (topic, partition, offset, attempts, error...)
   */
  public record Step(
      Instant at, String step, String by, String detail, Map<String, String> attributes) {
    public Step {
      Objects.requireNonNull(at, "at");
      Objects.requireNonNull(step, "step");
      Objects.requireNonNull(by, "by");
      Objects.requireNonNull(detail, "detail");
      attributes = Map.copyOf(attributes);
    }
  }
}
