package dev.postbox.testkit;

import java.nio.file.Path;
import java.time.Duration;

/**
 * Thrown by {@link ChildJvm#awaitLogLine} when no matching line appeared in the log within the
 * timeout while the process kept running. The message ends with the tail of the log.
 */
public final class LogLineTimeoutException extends RuntimeException {

  private final Path log;
  private final Duration timeout;

  public LogLineTimeoutException(String message, Path log, Duration timeout) {
    super(message);
    this.log = log;
    this.timeout = timeout;
  }

  /** The log file that was scanned. */
  public Path log() {
    return log;
  }

  /** How long the caller waited. */
  public Duration timeout() {
    return timeout;
  }
}
