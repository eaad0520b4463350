package dev.postbox.core.engine;

import dev.postbox.core.PostboxException;

/**
 * Thrown inside an effect's transaction to roll it back: the record is no longer this worker's
 * ({@link Ownership#mayCommit()} said no). Never leaves the engine: the retry loop and the batch
 * path turn it into "not finished", and the record is redelivered to the next owner.
 */
final class OwnershipLost extends PostboxException {
  private static final long serialVersionUID = 1L;

  OwnershipLost() {
    super("the record's partition may belong to another member: its transaction was rolled back");
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this; // a signal between two engine classes, not an error to trace
  }
}
