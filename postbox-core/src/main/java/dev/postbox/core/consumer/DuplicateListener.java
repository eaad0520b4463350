package dev.postbox.core.consumer;

/**
 * Receives each {@code DEDUPLICATED} delivery that was suppressed because its message id was
 * completed before, with the result the first delivery's handler recorded ({@link
 * Delivery#recordResult}; empty if none): to reply again with the same answer, say. Called on the
 * worker thread instead of the handler; a throw is logged and ignored (the duplicate stays
 * suppressed). Must be thread-safe.
 */
@FunctionalInterface
public interface DuplicateListener {

  /** Ignores duplicates (they are still counted). */
  static DuplicateListener ignore() {
    return (delivery, storedResult) -> {};
  }

  void duplicate(Delivery delivery, byte[] storedResult) throws Exception;
}
