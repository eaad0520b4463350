package dev.postbox.core.engine;

import dev.postbox.core.Message;
import dev.postbox.core.MessageConflictException;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.FailureDecision;
import dev.postbox.core.consumer.FailureHandler;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.engine.DeliveryProcessor.RetriesExhausted;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * Applies one message until it is finished or no longer owned: attempts it, asks the failure
 * handler after each failure, waits the decided backoff in place, and when it gives up on a
 * transient failure hands the message to delayed retries (retry topics or ordered parking) or the
 * dead letters. Under {@code AT_MOST_ONCE} a failed handler is never run again: a retry the failure
 * handler asks for becomes a give-up, straight into the dead letters (no in-place retry, no retry
 * topic or wait queue, no parking). Thread-safe.
 */
final class RetryLoop {

  /** The longest single wait between two ownership checks while backing off. */
  static final Duration OWNERSHIP_CHECK = Duration.ofMillis(50);

  private final boolean atMostOnce;
  private final InboxApplier applier;
  private final FailureHandler failures;
  private final EngineDelivery.Factory deliveries;
  private final Optional<RetriesExhausted> retriesExhausted;
  private final OrderedParking parking;
  private final DeadLetterWriter deadLetters;
  private final DeliveryTelemetry telemetry;
  private final Clock clock;
  private final Ticker ticker;
  private final Sleeper sleeper;

  RetryLoop(
      boolean atMostOnce,
      InboxApplier applier,
      FailureHandler failures,
      EngineDelivery.Factory deliveries,
      Optional<RetriesExhausted> retriesExhausted,
      OrderedParking parking,
      DeadLetterWriter deadLetters,
      DeliveryTelemetry telemetry,
      Clock clock,
      Ticker ticker,
      Sleeper sleeper) {
    this.atMostOnce = atMostOnce;
    this.applier = applier;
    this.failures = failures;
    this.deliveries = deliveries;
    this.retriesExhausted = retriesExhausted;
    this.parking = parking;
    this.deadLetters = deadLetters;
    this.telemetry = telemetry;
    this.clock = clock;
    this.ticker = ticker;
    this.sleeper = sleeper;
  }

  /**
   * Returns {@code true} when the message is finished (applied, suppressed, handed off, parked or
   * given up), {@code false} when {@code owned} turned false first (it will be redelivered).
   */
  boolean apply(Incoming in, Message message, MessageHandler h, BooleanSupplier owned) {
    Instant firstFailure = null;
    for (int attempt = 1; ; attempt++) {
      if (!owned.getAsBoolean()) {
        return false;
      }
      Throwable e = applier.attempt(in, message, h, attempt, owned);
      if (e == null) {
        return true;
      }
      if (e instanceof OwnershipLost) {
        return false; // rolled back before its commit: redelivered to the next owner
      }
      telemetry.meters(in).failed.increment();
      EngineDelivery delivery = deliveries.of(in, message, attempt, Optional.empty());
      if (firstFailure == null) {
        firstFailure = clock.instant(); // our own bookkeeping: never from message headers
      }
      FailureDecision decision = failures.decide(delivery, e);
      if (atMostOnce && decision instanceof FailureDecision.Retry) {
        // the message was acknowledged before the handler ran: running it again would repeat it
        decision = new FailureDecision.GiveUp("at-most-once: a failed handler is not run again");
      }
      switch (decision) {
        case FailureDecision.GiveUp g -> {
          return giveUp(delivery, e, g, firstFailure, owned);
        }
        case FailureDecision.Retry r -> {
          telemetry.retried(in);
          if (!waitWhileOwned(r.delay(), owned)) {
            return false; // revoked or closing while waiting: redelivered to the next owner
          }
        }
      }
    }
  }

  /** After the handler gave up: delayed retries elsewhere for a transient failure, else dead. */
  private boolean giveUp(
      EngineDelivery delivery,
      Throwable e,
      FailureDecision.GiveUp g,
      Instant firstFailure,
      BooleanSupplier owned) {
    Incoming in = delivery.incoming();
    boolean permanent = g.permanent() || e instanceof PermanentMessageException;
    if (!permanent && !atMostOnce && retriesExhausted.isPresent()) {
      // delayed retries elsewhere (retry topics): finished here once handed off
      return retriesExhausted.get().handOff(in, e, delivery.attempt(), firstFailure, owned);
    }
    if (!permanent && !atMostOnce && parking.canPark(delivery.message())) {
      // delayed retries off the hot path: park it; later messages of its key follow it there
      // (false: revoked before it was parked, redelivered to the next owner)
      return parking.park(in, delivery.message(), e, owned);
    }
    deadLetters.giveUp(
        delivery,
        e,
        g.reason(),
        e instanceof MessageConflictException
            ? Classification.CONFLICT
            : permanent ? Classification.PERMANENT : Classification.RETRIES_EXHAUSTED,
        firstFailure);
    return true;
  }

  /**
   * Waits {@code delay} in slices of at most {@link #OWNERSHIP_CHECK}; returns false as soon as the
   * record is no longer owned.
   */
  boolean waitWhileOwned(Duration delay, BooleanSupplier owned) {
    long deadline = ticker.deadlineIn(delay);
    try {
      while (true) {
        long left = deadline - ticker.nanos();
        if (left <= 0) {
          return true;
        }
        if (!owned.getAsBoolean()) {
          return false;
        }
        sleeper.sleep(Duration.ofNanos(Math.min(left, OWNERSHIP_CHECK.toNanos())));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
