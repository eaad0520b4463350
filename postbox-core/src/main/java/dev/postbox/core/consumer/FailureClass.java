package dev.postbox.core.consumer;

/**
 * How a {@link RetryPolicy} classifies a failure.
 *
 * @see RetryPolicy#classify(Throwable)
 */
public enum FailureClass {
  /** Retrying cannot help (poison message, {@code abortOn} exception): give up at once. */
  PERMANENT,
  /** Retrying may help (time-out, lost connection, unavailable dependency): retry with backoff. */
  TRANSIENT
}
