package dev.postbox.testkit;

import java.nio.file.Path;

/**
 * Thrown when a {@link ChildJvm} exited while the caller was waiting for it to reach some state
 * (for example, a log line). The message ends with the tail of the log.
 */
public final class ChildJvmExitedException extends RuntimeException {

  private final int exitCode;
  private final Path log;

  public ChildJvmExitedException(String message, int exitCode, Path log) {
    super(message);
    this.exitCode = exitCode;
    this.log = log;
  }

  /** The exit code of the process (137 after {@code kill -9}, 143 after {@code SIGTERM}). */
  public int exitCode() {
    return exitCode;
  }

  /** The log file of the process. */
  public Path log() {
    return log;
  }
}
