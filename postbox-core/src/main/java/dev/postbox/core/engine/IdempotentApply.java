package dev.postbox.core.engine;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.consumer.IdempotencyKeyBusyException;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.IdempotencyStore.Claim;
import dev.postbox.core.spi.IdempotencyStore.Claimed;
import dev.postbox.core.spi.IdempotencyStore.Completion;
import dev.postbox.core.spi.IdempotencyStore.Duplicate;
import dev.postbox.core.spi.IdempotencyStore.InProgress;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@code DEDUPLICATED} attempt: claim the key with a lease (waiting, up to one lease, while
 * another holder has it: never in parallel), run the effect, then complete the key with the
 * effect's result and the TTL, or release the lease if the effect failed. Thread-safe.
 */
final class IdempotentApply {

  private static final Logger log = LoggerFactory.getLogger(IdempotentApply.class);
  private static final Duration MAX_WAIT_SLICE = Duration.ofMillis(200);
  private static final Duration MIN_WAIT_SLICE = Duration.ofMillis(10);
  private static final int COMPLETE_TRIES = 4;

  /** The effect; returns the result to store. */
  @FunctionalInterface
  interface Effect {
    byte[] run() throws Exception;
  }

  /** What the store's answers mean for the counters. */
  interface Events {
    void previousLeaseExpired();

    void leaseLost();
  }

  /** Applied ({@code duplicate} false) or suppressed with the stored result. */
  record Outcome(boolean duplicate, byte[] storedResult) {}

  private final IdempotencyStore store;
  private final Sleeper sleeper;
  private final Duration lease;
  private final Duration ttl;

  IdempotentApply(IdempotencyStore store, Sleeper sleeper, Duration lease, Duration ttl) {
    this.store = store;
    this.sleeper = sleeper;
    this.lease = lease;
    this.ttl = ttl;
  }

  Outcome apply(String key, Effect effect, Events events) throws Exception {
    Claimed claimed;
    switch (claimOrWait(key)) {
      case Duplicate d -> {
        return new Outcome(true, d.result());
      }
      case Claimed c -> claimed = c;
      case InProgress p -> throw new IllegalStateException("unreachable");
    }
    if (claimed.previousLeaseExpired()) {
      events.previousLeaseExpired();
      log.warn(
          "{}: the previous lease expired without completion; its holder may have applied the"
              + " effect (the at-risk window): applying it again",
          key);
    }
    byte[] result;
    try {
      result = effect.run();
    } catch (Throwable t) {
      try {
        store.release(claimed.lease());
      } catch (RuntimeException e) {
        t.addSuppressed(e); // the lease then expires by itself
      }
      throw t;
    }
    CrashPoints.hit(CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_IDEMPOTENCY_COMPLETE);
    if (complete(claimed, result) == Completion.LEASE_LOST) {
      events.leaseLost();
      log.warn(
          "{}: the effect took longer than the lease ({}) and another holder claimed the key: the"
              + " effect may have run twice; raise idempotencyLease",
          key,
          lease);
    }
    return new Outcome(false, result);
  }

  /** Claims; while another holder has the key, waits (up to one lease) and claims again. */
  private Claim claimOrWait(String key) throws InterruptedException {
    Duration waited = Duration.ZERO;
    while (true) {
      Claim c = store.claim(key, lease, ttl);
      if (!(c instanceof InProgress p)) {
        return c;
      }
      if (waited.compareTo(lease) > 0) {
        throw new IdempotencyKeyBusyException(
            key + " is still held by another delivery after waiting " + waited);
      }
      Duration slice = p.remaining();
      if (slice.compareTo(MAX_WAIT_SLICE) > 0) {
        slice = MAX_WAIT_SLICE;
      }
      if (slice.compareTo(MIN_WAIT_SLICE) < 0) {
        slice = MIN_WAIT_SLICE;
      }
      sleeper.sleep(slice);
      waited = waited.plus(slice);
    }
  }

  /**
   * The effect is done: a failure to write the completion now would repeat it, so the write is
   * tried a few times before the failure goes to the retry policy.
   */
  private Completion complete(Claimed claimed, byte[] result) throws InterruptedException {
    Duration pause = Duration.ofMillis(100);
    for (int attempt = 1; ; attempt++) {
      try {
        return store.complete(claimed.lease(), result, ttl);
      } catch (RuntimeException e) {
        if (attempt >= COMPLETE_TRIES) {
          throw e;
        }
        log.warn(
            "{}: writing the completion failed ({}); trying again",
            claimed.lease().key(),
            e.toString());
        sleeper.sleep(pause);
        pause = pause.multipliedBy(2);
      }
    }
  }
}
