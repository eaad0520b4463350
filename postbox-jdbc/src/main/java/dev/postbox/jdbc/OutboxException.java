package dev.postbox.jdbc;

/**
 * A database operation of the outbox failed; the cause (usually a {@link java.sql.SQLException})
 * says why.
 */
public class OutboxException extends RuntimeException {
  public OutboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
