package dev.postbox.cli;

import dev.postbox.core.PostboxException;
import java.util.NoSuchElementException;
import picocli.CommandLine;

/**
 * The exit codes of the operator commands (public: scripts test them; add, never renumber), and the
 * mapping of the operations API's exceptions to them.
 */
final class ExitCodes {

  /** Done; for a read, something was found. */
  static final int OK = 0;

  /** An action ran but part of it failed (a letter could not be replayed). */
  static final int PARTLY_FAILED = 1;

  /** Bad command line (picocli's usage error code). */
  static final int USAGE = 2;

  /** A destructive action was not confirmed (no {@code --yes}, and no "yes" at the prompt). */
  static final int NOT_CONFIRMED = 3;

  /** Not found: no such dead letter, parked key, blocked row or message. */
  static final int NOT_FOUND = 4;

  /**
   * Refused in its current state: the letter is not PENDING, a consumer is retrying the key right
   * now.
   */
  static final int CONFLICT = 5;

  /** The database failed or could not be reached. */
  static final int DATABASE = 6;

  private ExitCodes() {}

  /** Prints the error on stderr and returns its code. */
  static CommandLine.IExecutionExceptionHandler handler() {
    return (e, cli, parsed) -> {
      int code;
      if (e instanceof NoSuchElementException) {
        code = NOT_FOUND;
      } else if (e instanceof IllegalStateException) {
        code = CONFLICT;
      } else if (e instanceof IllegalArgumentException) {
        code = USAGE;
      } else if (e instanceof PostboxException) {
        code = DATABASE;
      } else {
        throw e;
      }
      cli.getErr().println("postbox " + cli.getCommandName() + ": " + message(e));
      cli.getErr().flush();
      return code;
    };
  }

  private static String message(Throwable e) {
    StringBuilder b = new StringBuilder(String.valueOf(e.getMessage()));
    for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
      b.append(": ").append(c.getMessage());
    }
    return b.toString();
  }
}
