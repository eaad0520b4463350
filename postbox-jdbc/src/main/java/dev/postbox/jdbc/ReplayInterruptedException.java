package dev.postbox.jdbc;

import dev.postbox.core.PostboxException;

/**
 * A {@link Replayer} was interrupted while it waited between writes (rate limiting); the thread's
 * interrupt flag is set again. The letters replayed before stay replayed: {@link #partialResult()}
 * says which; the rest were not touched. A {@link PostboxException}, like every exception class
 * Postbox defines.
 */
public class ReplayInterruptedException extends PostboxException {

  private final transient ReplayResult partialResult;

  public ReplayInterruptedException(ReplayResult partialResult, InterruptedException cause) {
    super(
        "replay interrupted after "
            + partialResult.replayed().size()
            + " replayed, "
            + partialResult.skipped().size()
            + " skipped, "
            + partialResult.failed().size()
            + " failed",
        cause);
    this.partialResult = partialResult;
  }

  /** What was done before the interrupt. */
  public ReplayResult partialResult() {
    return partialResult;
  }
}
