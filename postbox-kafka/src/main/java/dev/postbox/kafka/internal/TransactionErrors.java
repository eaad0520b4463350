package dev.postbox.kafka.internal;

import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TransactionAbortableException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

/**
 * Sorts a transactional producer's failures into the classes Kafka 4.x defines (KIP-1050), as the
 * transactional relay handles them: {@link Kind#FENCED}: another owner of the lane started (its
 * producer took the lane's {@code transactional.id}), so this producer must be closed and its lane
 * given up; {@link Kind#ABORTABLE}: abort the transaction and publish the batch again with the same
 * producer; {@link Kind#FATAL}: the producer cannot go on; close it and create a new one (whose
 * {@code initTransactions} resolves whatever the old one left open).
 *
 * <p>The consume-transform-produce loop asks a coarser question, {@link #action(Throwable)}: abort
 * and retry on the same producer, or recreate it.
 */
public final class TransactionErrors {

  /** What a failure means for the lane's producer. */
  public enum Kind {
    FENCED,
    ABORTABLE,
    FATAL
  }

  /** The consume-transform-produce loop's answer to a failed transaction. */
  public enum Action {
    /** Abort the transaction, rewind the batch, retry on the same producer. */
    ABORT,
    /** Close the producer (its transaction dies with it), rewind, retry on a new producer. */
    RECREATE
  }

  private TransactionErrors() {}

  /**
   * The action for {@code error}, thrown by a transform, a send or a transaction call: an
   * application-recoverable error (fenced, stale epoch) or any other Kafka error (fatal for the
   * producer) recreates the producer; an abortable or retriable one, a failed offset commit, and
   * the transform's own failure abort and retry.
   */
  public static Action action(Throwable error) {
    boolean kafka = false;
    for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
      if (e instanceof org.apache.kafka.common.errors.ApplicationRecoverableException) {
        return Action.RECREATE;
      }
      if (e instanceof TransactionAbortableException
          || e instanceof org.apache.kafka.common.errors.RetriableException
          || e instanceof org.apache.kafka.clients.consumer.CommitFailedException) {
        return Action.ABORT;
      }
      kafka |= e instanceof org.apache.kafka.common.KafkaException;
    }
    return kafka ? Action.RECREATE : Action.ABORT;
  }

  /**
   * The class of {@code e} (or of any cause of it): fenced wins over everything, then fatal
   * classes, and every other API error (a record error, a timeout in the send path, {@link
   * TransactionAbortableException}) leaves the transaction abortable.
   */
  public static Kind classify(Throwable e) {
    Kind kind = null;
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException) {
        return Kind.FENCED;
      }
      if (kind == null) {
        kind = direct(t);
      }
    }
    return kind == null ? Kind.FATAL : kind;
  }

  private static Kind direct(Throwable t) {
    if (t instanceof TransactionAbortableException) {
      return Kind.ABORTABLE;
    }
    // ApplicationRecoverableException (InvalidPidMapping...), out of order sequence, unknown
    // producer id, authorization, an unsupported broker, the producer's own IllegalStateException
    // (fatal state) and KafkaException without an API cause: the producer must be recreated
    if (t instanceof org.apache.kafka.common.errors.ApplicationRecoverableException
        || t instanceof org.apache.kafka.common.errors.OutOfOrderSequenceException
        || t instanceof AuthorizationException
        || t instanceof UnsupportedVersionException
        || t instanceof IllegalStateException) {
      return Kind.FATAL;
    }
    if (t instanceof org.apache.kafka.common.errors.ApiException) {
      return Kind.ABORTABLE; // a record's error, a timeout: the transaction can be aborted
    }
    return null;
  }
}
