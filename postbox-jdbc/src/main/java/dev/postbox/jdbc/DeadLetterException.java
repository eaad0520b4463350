package dev.postbox.jdbc;

/**
 * A database operation of the dead-letter store ({@link PostgresDeadLetterStore}) or the {@link
 * Replayer} failed; the cause (usually a {@link java.sql.SQLException}) says why.
 *
 * <p>An {@link OutboxException}, so one {@code catch} handles every database failure of {@code
 * postbox-jdbc}.
 */
public class DeadLetterException extends OutboxException {
  public DeadLetterException(String message, Throwable cause) {
    super(message, cause);
  }
}
