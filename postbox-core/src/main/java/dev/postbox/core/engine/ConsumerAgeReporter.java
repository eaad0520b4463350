package dev.postbox.core.engine;

import dev.postbox.core.spi.ConsumerAgeStore;
import dev.postbox.core.time.Sleeper;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reports a subscriber instance's oldest unfinished message per queue to a {@link ConsumerAgeStore}
 * once every interval, on its own thread (for any transport adapter), so that a process without the
 * subscriber reads the queues' lag as age.
 *
 * <p>A failed report is logged (once per run of failures, with the next success logged too) and
 * tried again after the interval. {@link #run()} returns when {@code running} turns false (checked
 * after each sleep) or the thread is interrupted; the caller then {@linkplain #forget() forgets}
 * the instance's reports at a clean shutdown.
 */
public final class ConsumerAgeReporter implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(ConsumerAgeReporter.class);

  private final ConsumerAgeStore store;
  private final String subscription;
  private final String instance;
  private final Supplier<Map<String, Optional<Instant>>> oldestUnfinished;
  private final Clock clock;
  private final Duration interval;
  private final Sleeper sleeper;
  private final BooleanSupplier running;
  private boolean failing;

  /**
   * A reporter of {@code instance} of {@code subscription}: {@code oldestUnfinished} (per queue it
   * consumes now, the time of its oldest unfinished message, empty when none) at {@code clock}'s
   * time to {@code store}, every {@code interval} (slept with {@code sleeper}) while {@code
   * running}.
   */
  public ConsumerAgeReporter(
      ConsumerAgeStore store,
      String subscription,
      String instance,
      Supplier<Map<String, Optional<Instant>>> oldestUnfinished,
      Clock clock,
      Duration interval,
      Sleeper sleeper,
      BooleanSupplier running) {
    this.store = store;
    this.subscription = subscription;
    this.instance = instance;
    this.oldestUnfinished = oldestUnfinished;
    this.clock = clock;
    this.interval = interval;
    this.sleeper = sleeper;
    this.running = running;
  }

  @Override
  public void run() {
    while (running.getAsBoolean()) {
      reportOnce();
      try {
        sleeper.sleep(interval);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** One report now; a failure is logged, not thrown. */
  void reportOnce() {
    try {
      store.report(subscription, instance, oldestUnfinished.get(), clock.instant());
      if (failing) {
        failing = false;
        log.info("{}: reporting the unfinished ages works again", subscription);
      }
    } catch (RuntimeException e) {
      if (!failing) {
        failing = true;
        log.warn(
            "{}: reporting the unfinished ages failed; will retry every {}",
            subscription,
            interval,
            e);
      }
    }
  }

  /** Removes this instance's reports (at a clean shutdown); a failure is logged, not thrown. */
  public void forget() {
    try {
      store.forget(subscription, instance);
    } catch (RuntimeException e) {
      log.warn(
          "{}: could not remove the unfinished ages of {} (they go stale): {}",
          subscription,
          instance,
          e.toString());
    }
  }
}
