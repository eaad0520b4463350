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
   * relay sends a batch with this method only after the previous batch's outcomes are in and none
   * failed, so batches sent this way are never in flight together (a publisher that {@link
   * #pipelinesInOrder() pipelines in order} gets the next batch through {@link
   * #sendAfter(PendingPublish, List, List)} instead). Default: publishes synchronously (the pending
   * publish is complete when returned).
   */
  default PendingPublish send(List<Message> messages) throws InterruptedException {
    List<PublishOutcome> outcomes = publish(messages);
    return () -> outcomes;
  }

  /**
   * Like {@link #send(List)}, also telling the lease under which each message is published: {@code
   * leases.get(i)} is the lane lease (lane and fencing epoch) of {@code messages.get(i)}'s outbox
   * row. A publisher may stamp the epoch on the record (so a reader can tell a stale owner's
   * publish) or publish each lane under its own fenced identity (Kafka's transactional relay). The
   * relay always calls this method; the default ignores the leases.
   */
  default PendingPublish send(List<Message> messages, List<LaneLease> leases)
      throws InterruptedException {
    return send(messages);
  }

  /**
   * Tells the publisher which lanes the relay owns now, under which epochs; called by the
   * publishing thread before it claims, whenever the set changed (a lane acquired, re-acquired
   * under a new epoch, released or lost). A released lane never has a batch in flight; a lost one
   * may, and the publisher may then fail that batch (its rows are not marked either way). A
   * publisher that fences per lane sets up its identity for each new lease here (Kafka: {@code
   * initTransactions}, which fences every earlier owner of the lane) and drops the lanes no longer
   * owned. Default: does nothing.
   */
  default void lanesOwned(java.util.Collection<LaneLease> leases) throws InterruptedException {}

  /**
   * Called once by the relay's {@code start()}, before it takes any lane: fails (with a {@link
   * dev.postbox.core.PostboxException}) when the broker refuses this publisher's connection for a
   * reason no retry can fix, such as rejected credentials or an untrusted certificate, so that a
   * misconfigured relay fails at start instead of retrying its batches forever. An unreachable
   * broker is not such a reason (the relay starts and retries). Default: no check.
   */
  default void checkAccess() {}

  /**
   * Sends {@code messages} after {@code previous} (returned by {@link #send} or this method), which
   * may still be in flight: several batches in flight at once, for a relay that pipelines (the CDC
   * relay). The ordering contract above extends across the pair: if a message of {@code previous}
   * fails, no message of this batch may be appended ahead of a later resend of the failed one. A
   * publisher that cannot promise that for a batch reports every message of it failed (not
   * permanent), without sending it.
   *
   * <p>Default: waits for {@code previous}'s outcomes, then sends this batch if all of them were
   * acknowledged, else reports it failed without sending it (correct, not pipelined).
   */
  default PendingPublish sendAfter(PendingPublish previous, List<Message> messages)
      throws InterruptedException {
    for (PublishOutcome o : previous.outcomes()) {
      if (!(o instanceof PublishOutcome.Acknowledged)) {
        PublishOutcome notSent =
            new PublishOutcome.Failed(
                new IllegalStateException("not sent: an earlier batch failed"), false);
        List<PublishOutcome> all = java.util.Collections.nCopies(messages.size(), notSent);
        return () -> all;
      }
    }
    return send(messages);
  }

  /**
   * Like {@link #sendAfter(PendingPublish, List)}, also telling each message's lease (as {@link
   * #send(List, List)} does). The polling relay calls it for batch n+1 while batch n ({@code
   * previous}) is still in flight when {@link #pipelinesInOrder()} is true. Default: ignores the
   * leases.
   */
  default PendingPublish sendAfter(
      PendingPublish previous, List<Message> messages, List<LaneLease> leases)
      throws InterruptedException {
    return sendAfter(previous, messages);
  }

  /**
   * Whether {@link #sendAfter(PendingPublish, List, List)} sends its batch at once, while {@code
   * previous} is still in flight, on the same ordered stream (one producer, one channel), keeping
   * the ordering contract across the pair: nothing of the batch is sent once the publisher knows
   * that a message of {@code previous} failed, and nothing goes out on a new stream behind a broken
   * one. The polling relay then sends batch n+1 before batch n's outcomes are in, so two batches
   * wait for the broker at once; it still marks n+1 only if every row of n was acknowledged (else
   * n+1's rows stay pending and are published again after n's failed rows). Default {@code false}:
   * the relay sends n+1 only once n's outcomes are in.
   */
  default boolean pipelinesInOrder() {
    return false;
  }

  @Override
  void close();

  /** A batch handed to {@link #send(List)}: its outcomes, once the broker has given them. */
  @FunctionalInterface
  interface PendingPublish {
    /** Waits until every message was acknowledged or failed; the outcomes in send order. */
    List<PublishOutcome> outcomes() throws InterruptedException;

    /**
     * As {@link #outcomes()}, for a caller that has nothing more to send for now: a publisher that
     * holds records back for later ones to join them (Kafka's {@code linger.ms}) sends them at
     * once, even when later batches were sent behind this one, instead of letting them wait out the
     * linger. The default is {@link #outcomes()}.
     */
    default List<PublishOutcome> outcomesWhenIdle() throws InterruptedException {
      return outcomes();
    }
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
     * <p>A failure that is {@code permanent} or {@code topicWide} makes the row
     * <em>unpublishable</em>: the relay stops retrying it and, by default, holds the later rows of
     * its key (and, when {@code topicWide}, every row of its topic) behind it until an operator
     * retries or skips it. A publisher that learns of such a failure while it is still sending the
     * batch must not send the later messages of the same key (nor, when {@code topicWide}, of the
     * same topic) in that batch; it reports them as failed, not permanent.
     *
     * @param error what went wrong
     * @param permanent whether retrying can never succeed (for example: the record is larger than
     *     the broker accepts)
     * @param topicWide whether the failure is the topic's rather than the message's, so that every
     *     message of the topic would fail alike (the topic does not exist, the broker refuses it by
     *     ACL, its name is invalid): not worth a retry before someone changes the cluster
     */
    record Failed(Throwable error, boolean permanent, boolean topicWide) implements PublishOutcome {
      /** A failure of this message alone. */
      public Failed(Throwable error, boolean permanent) {
        this(error, permanent, false);
      }

      /** Whether the relay gives up retrying this row ({@code permanent || topicWide}). */
      public boolean unpublishable() {
        return permanent || topicWide;
      }
    }

    /** The acknowledged outcome without a position (a shared instance). */
    PublishOutcome ACKNOWLEDGED = new Acknowledged();
  }
}
