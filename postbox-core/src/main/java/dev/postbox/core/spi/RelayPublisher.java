package dev.postbox.core.spi;

import dev.postbox.core.Message;
import java.util.List;

/**
 * Sends messages to a broker for the relay. {@code postbox-kafka} implements it.
 *
 * <p>Contract, which the relay's ordering guarantee rests on:
 *
 * <ul>
 *   <li>messages are sent in list order, and the broker appends messages of one key in that order;
 *   <li>the call returns only when every message is either acknowledged by the broker (durably,
 *       e.g. {@code acks=all}) or failed;
 *   <li>after a failure, nothing later in the list with the same key may be appended ahead of a
 *       later resend of the failed message (the Kafka implementation discards its producer at the
 *       first failure).
 * </ul>
 *
 * <p>Called from one thread at a time.
 */
public interface RelayPublisher extends AutoCloseable {

  /** Publishes {@code messages} in order and reports the outcome of each, in the same order. */
  List<PublishOutcome> publish(List<Message> messages) throws InterruptedException;

  /**
   * Starts publishing {@code messages} in order and returns without waiting for the broker, so the
   * relay can claim its next batch and mark the previous one meanwhile; {@link
   * PendingPublish#outcomes()} then waits for them. The contract above applies to the pair. The
   * relay sends a batch only after the previous batch's outcomes are in and none failed
   * transiently, so batches are never in flight together. Default: publishes synchronously (the
   * pending publish is complete when returned).
   */
  default PendingPublish send(List<Message> messages) throws InterruptedException {
    List<PublishOutcome> outcomes = publish(messages);
    return () -> outcomes;
  }

  @Override
  void close();

  /** A batch handed to {@link #send(List)}: its outcomes, once the broker has given them. */
  @FunctionalInterface
  interface PendingPublish {
    /** Waits until every message was acknowledged or failed; the outcomes in send order. */
    List<PublishOutcome> outcomes() throws InterruptedException;
  }

  /** What happened to one message. */
  sealed interface PublishOutcome {
    /**
     * The broker acknowledged the message.
     *
     * @param partition the partition it was appended to, or -1 when the publisher cannot tell
     * @param offset its offset there, or -1 when the publisher cannot tell
     */
    record Acknowledged(int partition, long offset) implements PublishOutcome {
      /** An acknowledgement without a position. */
      public Acknowledged() {
        this(-1, -1);
      }
    }

    /**
     * The message was not acknowledged.
     *
     * @param error what went wrong
     * @param permanent whether retrying can never succeed (for example: the record is larger than
     *     the broker accepts)
     */
    record Failed(Throwable error, boolean permanent) implements PublishOutcome {}

    /** The acknowledged outcome without a position (a shared instance). */
    PublishOutcome ACKNOWLEDGED = new Acknowledged();
  }
}
