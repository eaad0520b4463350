package dev.postbox.core.engine;

import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Purges an {@code EFFECTIVELY_ONCE} subscription's dedupe records (for any transport adapter)
 * older than its inbox retention, in chunks, once every purge interval, on its own thread.
 *
 * <p>A full chunk is followed by the next at once; a failed purge is logged and tried again after
 * the interval. {@link #run()} returns when {@code running} turns false (checked between chunks and
 * after each sleep) or the thread is interrupted.
 */
public final class InboxJanitor implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(InboxJanitor.class);

  /** Rows purged by one call; a call that purged this many is followed by another at once. */
  static final int CHUNK = 10_000;

  private final InboxStore store;
  private final String subscription;
  private final Duration retention;
  private final Duration interval;
  private final Sleeper sleeper;
  private final BooleanSupplier running;

  /**
   * A janitor of {@code subscription}'s rows in {@code store} older than {@code retention}, every
   * {@code interval} (slept with {@code sleeper}) while {@code running}.
   */
  public InboxJanitor(
      InboxStore store,
      String subscription,
      Duration retention,
      Duration interval,
      Sleeper sleeper,
      BooleanSupplier running) {
    this.store = store;
    this.subscription = subscription;
    this.retention = retention;
    this.interval = interval;
    this.sleeper = sleeper;
    this.running = running;
  }

  @Override
  public void run() {
    while (running.getAsBoolean()) {
      try {
        int n;
        do {
          n = store.purge(subscription, retention, CHUNK);
        } while (n == CHUNK && running.getAsBoolean());
        sleeper.sleep(interval);
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        log.warn("{}: inbox purge failed; will retry", subscription, e);
        try {
          sleeper.sleep(interval);
        } catch (InterruptedException ie) {
          return;
        }
      }
    }
  }
}
