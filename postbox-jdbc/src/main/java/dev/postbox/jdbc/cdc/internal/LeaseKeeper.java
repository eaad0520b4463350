package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Renews the slot lease while this instance holds it, every quarter of its TTL, and records how far
 * behind the slot is ({@code behind_since}: the commit time of the oldest transaction streamed and
 * not yet confirmed). Runs on a thread of its own, so a busy or blocked streaming thread does not
 * starve the renewal.
 */
public final class LeaseKeeper {

  private final SlotLease lease;
  private final AtomicReference<CommitTracker> trackers;
  private final Sleeper sleeper;
  private final Ticker ticker;
  private volatile boolean stopped;

  public LeaseKeeper(
      SlotLease lease, AtomicReference<CommitTracker> trackers, Sleeper sleeper, Ticker ticker) {
    this.lease = lease;
    this.trackers = trackers;
    this.sleeper = sleeper;
    this.ticker = ticker;
  }

  public void stop() {
    stopped = true;
  }

  public void run() {
    Duration every = lease.ttl().dividedBy(4);
    Duration step = every.compareTo(Duration.ofMillis(50)) < 0 ? every : Duration.ofMillis(50);
    long renewed = ticker.nanos();
    long renewedEpoch = 0;
    try {
      while (!stopped) {
        long e = lease.epoch();
        if (e != 0 && (e != renewedEpoch || ticker.elapsedSince(renewed).compareTo(every) >= 0)) {
          if (e == renewedEpoch) {
            CommitTracker t = trackers.get();
            lease.renew(e, t.epoch() == e ? t.oldestOpenCommitTime() : null);
          }
          renewedEpoch = e;
          renewed = ticker.nanos();
        }
        sleeper.sleep(step);
      }
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
    }
  }
}
