package dev.postbox.core.time;

import java.time.Duration;

/**
 * Waits for a duration. Injected wherever Postbox waits (backoff, polling) so tests can replace
 * real sleeping.
 *
 * <p>Implementations must be thread-safe.
 */
@FunctionalInterface
public interface Sleeper {

  /** Sleeps on the calling thread with {@link Thread#sleep(Duration)}. */
  Sleeper SYSTEM = Thread::sleep;

  /** Waits for {@code duration}; returns early only by throwing {@link InterruptedException}. */
  void sleep(Duration duration) throws InterruptedException;
}
