package dev.postbox.spring;

import dev.postbox.core.PermanentMessageException;

/**
 * An effectively-once listener wrote outside its transaction ({@code REQUIRES_NEW}, another {@code
 * DataSource}) under {@code postbox.consumers.escaped-writes: fail}: the attempt is rolled back
 * and, being permanent, not retried (a retry would repeat the escaped write); the message goes
 * where the delivery table sends failures (dead letters, parking).
 */
public class ListenerTransactionEscapedException extends PermanentMessageException {

  /** The listener and what escaped, in {@code message}. */
  public ListenerTransactionEscapedException(String message) {
    super(message);
  }
}
