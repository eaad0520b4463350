package dev.postbox.kafka.internal;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.ApplicationRecoverableException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TransactionAbortableException;

/**
 * What a failed transaction needs, by Kafka 4.x's classes of transactional errors (KIP-1050): an
 * abortable error is answered by aborting and retrying the batch on the same producer; an
 * application-recoverable one (the producer was fenced, its epoch is stale) and any other Kafka
 * error (fatal for the producer) by closing the producer and making a new one. Stateless.
 */
public final class TransactionErrors {

  /** The answer to a failed transaction. */
  public enum Action {
    /** Abort the transaction, rewind the batch, retry on the same producer. */
    ABORT,
    /** Close the producer (its transaction dies with it), rewind, retry on a new producer. */
    RECREATE
  }

  private TransactionErrors() {}

  /** The action for {@code error}, thrown by a transform, a send or a transaction call. */
  public static Action classify(Throwable error) {
    boolean kafka = false;
    for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
      if (e instanceof ApplicationRecoverableException) {
        return Action.RECREATE;
      }
      if (e instanceof TransactionAbortableException
          || e instanceof RetriableException
          || e instanceof CommitFailedException) {
        return Action.ABORT;
      }
      kafka |= e instanceof KafkaException;
    }
    // another Kafka error is fatal for this producer; the transform's own failure is not
    return kafka ? Action.RECREATE : Action.ABORT;
  }
}
