package dev.postbox.jdbc;

/**
 * A database operation of the inbox ({@link PostgresInboxStore}) failed; the cause (usually a
 * {@link java.sql.SQLException}) says why. Only failures of the inbox's own statements are wrapped:
 * an exception thrown by the caller's work propagates unchanged.
 *
 * <p>An {@link OutboxException}, so one {@code catch} handles every database failure of {@code
 * postbox-jdbc}.
 */
public class InboxException extends OutboxException {
  public InboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
