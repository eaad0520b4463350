package dev.postbox.jdbc;

import dev.postbox.core.PostboxException;

/**
 * A database operation of the outbox failed; the cause (usually a {@link java.sql.SQLException})
 * says why. A {@link PostboxException}, like every exception class Postbox defines.
 */
public class OutboxException extends PostboxException {
  public OutboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
