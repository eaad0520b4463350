package dev.postbox.core.consumer;

import dev.postbox.core.spi.ParkingStore;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The settings of the subscribers that keep per-key order (Kafka's consumer groups, RabbitMQ's
 * shard queues), declared once beside those of every subscriber ({@link SubscriberBuilder}):
 * batches and ordered parking.
 *
 * @param <B> the transport's builder, returned by every setter for chaining
 */
public abstract class OrderedSubscriberBuilder<B extends OrderedSubscriberBuilder<B>>
    extends SubscriberBuilder<B> {

  /** Default delays of the parked retries. */
  public static final List<Duration> DEFAULT_PARKING_TIERS =
      List.of(Duration.ofSeconds(10), Duration.ofMinutes(1), Duration.ofMinutes(10));

  /** Default: the rest of a parked key goes on once its head is dead-lettered. */
  public static final boolean DEFAULT_BLOCK_KEY_AFTER_DEAD_LETTER = false;

  /**
   * The ordered subscribers' settings as set, for the transport's {@code build()}.
   *
   * @param batchHandler the batch handler (a subscription's batch size above 1)
   * @param parking the parking store (ordered parking on)
   * @param parkingTiers the delays of the parked retries
   * @param blockKeyAfterDeadLetter whether a parked key waits for an operator once its head is
   *     dead-lettered
   */
  public record Ordered(
      Optional<BatchHandler> batchHandler,
      Optional<ParkingStore> parking,
      List<Duration> parkingTiers,
      boolean blockKeyAfterDeadLetter) {}

  private BatchHandler batchHandler;
  private ParkingStore parking;
  private List<Duration> parkingTiers = DEFAULT_PARKING_TIERS;
  private boolean blockKeyAfterDeadLetter = DEFAULT_BLOCK_KEY_AFTER_DEAD_LETTER;

  /** For the transports' builders. */
  protected OrderedSubscriberBuilder() {}

  /**
   * Sets the batch handler (required when the subscription's batch size is above 1): it gets
   * consecutive messages of one partition or shard queue, in order, in one transaction for {@code
   * EFFECTIVELY_ONCE}.
   */
  public B batchHandler(BatchHandler batchHandler) {
    this.batchHandler = Objects.requireNonNull(batchHandler, "batchHandler");
    return self();
  }

  /**
   * Turns on ordered parking (default: off; in-place retries, then the dead letters): a message
   * whose in-place retries ran out for a transient failure is parked with every later message of
   * its key, in order, and retried as a sequence after the delay tiers while other keys flow on.
   * Needs KEY or PARTITION ordering.
   */
  public B parking(ParkingStore store) {
    this.parking = Objects.requireNonNull(store, "store");
    return self();
  }

  /**
   * Sets the delays of the parked retries (default 10 s, 1 min, 10 min; at least one, none
   * negative); after the last the head is dead-lettered.
   */
  public B parkingTiers(Duration... tiers) {
    List<Duration> list = List.of(tiers);
    if (list.isEmpty()) {
      throw new IllegalArgumentException("parkingTiers needs at least one delay");
    }
    for (Duration d : list) {
      if (d.isNegative()) {
        throw new IllegalArgumentException("parkingTiers must not be negative: " + list);
      }
    }
    this.parkingTiers = list;
    return self();
  }

  /**
   * What the rest of a parked key does when its head is dead-lettered: wait for an operator ({@code
   * true}: block) or go on, with the gap recorded in the dead letters ({@code false}, the default).
   */
  public B blockKeyAfterDeadLetter(boolean block) {
    this.blockKeyAfterDeadLetter = block;
    return self();
  }

  /** The ordered subscribers' settings as set. */
  protected final Ordered ordered() {
    return new Ordered(
        Optional.ofNullable(batchHandler),
        Optional.ofNullable(parking),
        parkingTiers,
        blockKeyAfterDeadLetter);
  }
}
