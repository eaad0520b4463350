package dev.postbox.core.engine;

import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.engine.DeliveryProcessor.Parking;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.ParkingStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Retries parked sequences that are due, off the hot path: for each leased key, applies its parked
 * messages in order until one fails (rescheduled for its next tier, or dead-lettered after the
 * last) or the sequence is empty. Thread-safe.
 */
final class ParkingDrainer {

  // the processor's logger name, which operators configure
  private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

  /** How long a drainer leases a due key. */
  private static final Duration KEY_LEASE = Duration.ofMinutes(1);

  /** Most keys claimed per drain. */
  private static final int KEYS_PER_DRAIN = 20;

  /** When a blocked key's rest is due: never, until an operator acts. */
  private static final Instant NEVER = Instant.parse("9999-01-01T00:00:00Z");

  private final String group;
  private final Parking parking;
  private final MessageHandler handler;
  private final InboxApplier applier;
  private final DeadLetterWriter deadLetters;
  private final DeliveryTelemetry telemetry;
  private final Clock clock;

  ParkingDrainer(
      String group,
      Parking parking,
      MessageHandler handler,
      InboxApplier applier,
      DeadLetterWriter deadLetters,
      DeliveryTelemetry telemetry,
      Clock clock) {
    this.group = group;
    this.parking = parking;
    this.handler = handler;
    this.applier = applier;
    this.deadLetters = deadLetters;
    this.telemetry = telemetry;
    this.clock = clock;
  }

  /** Drains the due keys while {@code running}; returns how many parked messages were applied. */
  int drain(BooleanSupplier running) {
    int done = 0;
    for (String key : parking.store().claimDue(group, clock.instant(), KEY_LEASE, KEYS_PER_DRAIN)) {
      if (!running.getAsBoolean()) {
        parking.store().release(group, key);
        continue;
      }
      done += drainKey(key, running);
    }
    return done;
  }

  private int drainKey(String key, BooleanSupplier running) {
    int done = 0;
    for (ParkingStore.Parked p : parking.store().sequence(group, key)) {
      if (!running.getAsBoolean()) {
        parking.store().release(group, key);
        return done;
      }
      Incoming in = parking.rehydrate().apply(p.record());
      Message message = null;
      Throwable error;
      try {
        message = in.decode().get();
        // the parking's key lease guards this record, not a partition: a plain supplier (no check
        // before the commit)
        error = applier.attempt(in, message, handler, p.attempts() + 2, running);
      } catch (DecodingException e) {
        error = e;
      }
      if (error != null) {
        telemetry.meters(in).failed.increment();
      }
      if (error == null) {
        telemetry.unparked.incrementAndGet(); // applied (committed); its parked row goes next
        parking.store().remove(p.id());
        done++;
        continue;
      }
      int next = p.attempts() + 1;
      boolean permanent = error instanceof PermanentMessageException;
      if (!permanent && next < parking.tiers().size()) {
        telemetry.retried(in);
        parking
            .store()
            .reschedule(
                group,
                key,
                p.id(),
                next,
                clock.instant().plus(parking.tiers().get(next)),
                String.valueOf(error));
        return done;
      }
      telemetry.givenUp.incrementAndGet();
      deadLetters.store(
          in,
          message,
          error,
          permanent ? Classification.PERMANENT : Classification.RETRIES_EXHAUSTED,
          next,
          p.dueAt(),
          clock.instant());
      parking.store().remove(p.id());
      if (parking.block()) {
        blockRest(key, error);
        return done;
      }
      log.warn(
          "{}: parked message of key {} dead-lettered; the key goes on (the gap is in the dead letters)",
          group,
          key);
    }
    return done;
  }

  /**
   * After the head of a blocking key was dead-lettered: its rest stays parked until an operator.
   */
  private void blockRest(String key, Throwable error) {
    log.warn(
        "{}: parked head of key {} dead-lettered; the rest of the key stays parked (block)",
        group,
        key);
    List<ParkingStore.Parked> rest = parking.store().sequence(group, key);
    if (!rest.isEmpty()) {
      parking
          .store()
          .reschedule(
              group, key, rest.get(0).id(), 0, NEVER, "blocked behind a dead letter: " + error);
    }
  }
}
