package dev.postbox.core.engine;

import dev.postbox.core.Message;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.engine.DeliveryProcessor.Parking;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.ParkingStore;
import java.time.Clock;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * Writes to the parking store on the hot path: parks a failing record as its key's head, and
 * appends a later record of a parked key behind it, so the key keeps its order. Every write is
 * retried while the record is owned; a write the store refuses for good dead-letters the record
 * instead (counted and logged by {@link RefusedWrites}). Thread-safe.
 */
final class OrderedParking {

  /** What {@link #parkBehind} did with a record. */
  enum ParkBehind {
    /** Its key has a parked sequence: appended, it waits its turn. */
    APPENDED,
    /** Its key has none: apply it. */
    NOT_PARKED,
    /** The store failed until the record was no longer owned: neither (it is redelivered). */
    NOT_OWNED,
    /**
     * The store refused it for good (a permanent SQLSTATE): dead-lettered instead, so neither its
     * key nor its partition waits on a write that can never succeed.
     */
    DEAD_LETTERED
  }

  private final String group;
  private final Optional<Parking> parking;
  private final StoreRetry storeRetry;
  private final DeadLetterWriter deadLetters;
  private final RefusedWrites refused;
  private final DeliveryTelemetry telemetry;
  private final Clock clock;

  OrderedParking(
      String group,
      Optional<Parking> parking,
      StoreRetry storeRetry,
      DeadLetterWriter deadLetters,
      RefusedWrites refused,
      DeliveryTelemetry telemetry,
      Clock clock) {
    this.group = group;
    this.parking = parking;
    this.storeRetry = storeRetry;
    this.deadLetters = deadLetters;
    this.refused = refused;
    this.telemetry = telemetry;
    this.clock = clock;
  }

  /** Whether a failed {@code message} can be parked (parking is on and the message has a key). */
  boolean canPark(Message message) {
    return parking.isPresent() && message.key().isPresent();
  }

  /**
   * If the message's key has a parked sequence, appends it there (it waits its turn). The store is
   * asked again while the record is owned: an answer lost to a database error must never let the
   * record overtake its key's parked head.
   */
  ParkBehind parkBehind(Incoming in, Message message, BooleanSupplier owned) {
    if (!canPark(message)) {
      return ParkBehind.NOT_PARKED;
    }
    String key = message.key().get();
    Optional<Boolean> appended;
    try {
      appended =
          storeRetry.untilDone(
              "checking the parked sequence of key "
                  + key
                  + " for "
                  + DeliveryProcessor.position(in),
              owned,
              () -> parking.get().store().appendIfParked(group, key, parkedRecord(in)));
    } catch (StoreRefused e) {
      refused.refused(in, "parking store", e, "the record is dead-lettered instead");
      deadLetters.store(
          in, message, e, Classification.PERMANENT, 1, clock.instant(), clock.instant());
      return ParkBehind.DEAD_LETTERED;
    }
    if (appended.isEmpty()) {
      return ParkBehind.NOT_OWNED;
    }
    if (appended.get()) {
      telemetry.parked.incrementAndGet();
      telemetry.meters(in).parked.increment();
      return ParkBehind.APPENDED;
    }
    return ParkBehind.NOT_PARKED;
  }

  /**
   * Parks {@code in} (whose in-place retries of {@code error} ran out) as the head of its key, due
   * after the first tier; later messages of its key follow it there. The store is retried while the
   * partition is owned: if the record were abandoned here, a later record of its key would find
   * nothing parked and overtake it. Returns false if it was no longer owned before it was parked
   * (it is redelivered).
   */
  boolean park(Incoming in, Message message, Throwable error, BooleanSupplier owned) {
    Parking pk = parking.orElseThrow();
    String key = message.key().orElseThrow();
    boolean stored;
    try {
      stored =
          storeRetry
              .untilDone(
                  "parking " + DeliveryProcessor.position(in) + " (key " + key + ")",
                  owned,
                  () -> {
                    pk.store()
                        .park(
                            group,
                            key,
                            parkedRecord(in),
                            0,
                            clock.instant().plus(pk.tiers().get(0)),
                            String.valueOf(error));
                    return true;
                  })
              .isPresent();
    } catch (StoreRefused e) {
      refused.refused(in, "parking store", e, "the record is dead-lettered instead");
      error.addSuppressed(e);
      deadLetters.store(
          in,
          message,
          error,
          Classification.RETRIES_EXHAUSTED,
          1,
          clock.instant(),
          clock.instant());
      return true;
    }
    if (!stored) {
      return false;
    }
    telemetry.parked.incrementAndGet();
    telemetry.meters(in).parked.increment();
    return true;
  }

  private static ParkingStore.ParkedRecord parkedRecord(Incoming in) {
    return new ParkingStore.ParkedRecord(
        in.topic(), in.partition(), in.offset(), in.key(), in.value(), in.headers());
  }
}
