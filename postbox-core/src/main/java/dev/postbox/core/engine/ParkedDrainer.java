package dev.postbox.core.engine;

import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.ToIntFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the delayed retries of parked keys, off the poll thread and off the hot path: drains what is
 * due, and when nothing was, sleeps {@link #IDLE} before looking again.
 *
 * <p>A failed drain is logged and tried again after {@link #AFTER_FAILURE}. {@link #run()} returns
 * when {@code running} turns false or the thread is interrupted while sleeping.
 */
public final class ParkedDrainer implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(ParkedDrainer.class);

  /** The pause after a round that found nothing due. */
  static final Duration IDLE = Duration.ofMillis(200);

  /** The pause after a round that failed. */
  static final Duration AFTER_FAILURE = Duration.ofSeconds(1);

  private final String subscription;
  private final ToIntFunction<BooleanSupplier> drain;
  private final Sleeper sleeper;
  private final BooleanSupplier running;

  /**
   * A drainer of {@code subscription}'s parked keys: {@code drain} retries what is due (going on
   * while its argument is true) and returns how many it retried.
   */
  public ParkedDrainer(
      String subscription,
      ToIntFunction<BooleanSupplier> drain,
      Sleeper sleeper,
      BooleanSupplier running) {
    this.subscription = subscription;
    this.drain = drain;
    this.sleeper = sleeper;
    this.running = running;
  }

  @Override
  public void run() {
    while (running.getAsBoolean()) {
      try {
        if (drain.applyAsInt(running) == 0) {
          sleeper.sleep(IDLE);
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        log.warn("{}: retrying parked messages failed; will retry", subscription, e);
        try {
          sleeper.sleep(AFTER_FAILURE);
        } catch (InterruptedException ie) {
          return;
        }
      }
    }
  }
}
