package dev.postbox.testkit;

/**
 * Thrown when the Kafka broker or the PostgreSQL server could not be started or did not become
 * ready in time. The message names the server and, for the broker, ends with the tail of its log.
 */
public final class InfrastructureStartupException extends RuntimeException {

  public InfrastructureStartupException(String message) {
    super(message);
  }

  public InfrastructureStartupException(String message, Throwable cause) {
    super(message, cause);
  }
}
