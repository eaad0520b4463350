package dev.postbox.jdbc;

import dev.postbox.core.spi.InboxStore;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * Purges one consumer's dedupe records older than a retention.
 *
 * <p>A dedupe record must outlive every redelivery of its message: a message redelivered after its
 * record was purged is applied a second time. So the builder refuses a retention shorter than the
 * {@linkplain Builder#minimumSafeRetention(Duration) minimum safe retention} (for a Kafka consumer,
 * the Kafka module passes the topic's {@code retention.ms}), unless {@linkplain
 * Builder#force(boolean) forced}.
 *
 * <pre>{@code
 * InboxRetention retention = InboxRetention.builder(inbox, "billing")
 *     .retention(Duration.ofDays(14))
 *     .minimumSafeRetention(Duration.ofDays(7))
 *     .build();
 * long purged = retention.purgeNow(); // for example from a daily scheduled task
 * }</pre>
 *
 * <p>Defaults: no retention (it must be set), minimum safe retention zero, not forced, chunks of
 * {@value #DEFAULT_CHUNK_SIZE} records. Immutable and thread-safe.
 */
public final class InboxRetention {

  /** How many records one delete statement removes at most, by default. */
  public static final int DEFAULT_CHUNK_SIZE = 10_000;

  private final InboxStore store;
  private final String consumer;
  private final Duration retention;
  private final int chunkSize;

  private InboxRetention(Builder b, Duration retention) {
    this.store = b.store;
    this.consumer = b.consumer;
    this.retention = retention;
    this.chunkSize = b.chunkSize;
  }

  /** A builder for purging the dedupe records of {@code consumer} in {@code store}. */
  public static Builder builder(InboxStore store, String consumer) {
    return new Builder(store, consumer);
  }

  /** The consumer whose records are purged. */
  public String consumer() {
    return consumer;
  }

  /** How long records are kept. */
  public Duration retention() {
    return retention;
  }

  /**
   * Deletes every record of the consumer older than the retention, in chunks (one transaction
   * each), and returns how many it deleted.
   *
   * @throws InboxException if a delete fails (the chunks deleted before stay deleted)
   */
  public long purgeNow() {
    long total = 0;
    int n;
    do {
      n = store.purge(consumer, retention, chunkSize);
      total += n;
    } while (n == chunkSize);
    return total;
  }

  @Override
  public String toString() {
    return "InboxRetention[consumer=" + consumer + ", retention=" + retention + "]";
  }

  /** Builds an {@link InboxRetention}. Not thread-safe. */
  public static final class Builder {
    private final InboxStore store;
    private final String consumer;
    private Optional<Duration> retention = Optional.empty();
    private Duration minimumSafeRetention = Duration.ZERO;
    private boolean force;
    private int chunkSize = DEFAULT_CHUNK_SIZE;

    private Builder(InboxStore store, String consumer) {
      this.store = Objects.requireNonNull(store, "store");
      this.consumer = Objects.requireNonNull(consumer, "consumer");
    }

    /** How long to keep records (required; not negative). */
    public Builder retention(Duration retention) {
      this.retention = Optional.of(Objects.requireNonNull(retention, "retention"));
      return this;
    }

    /**
     * The shortest retention that is safe: how long a message can still be redelivered after it was
     * first processed (default zero, no check). For Kafka, at least the topic's {@code
     * retention.ms}.
     */
    public Builder minimumSafeRetention(Duration minimumSafeRetention) {
      this.minimumSafeRetention =
          Objects.requireNonNull(minimumSafeRetention, "minimumSafeRetention");
      return this;
    }

    /**
     * Accept a retention shorter than the minimum safe retention (default false), for example
     * because the effects are idempotent anyway.
     */
    public Builder force(boolean force) {
      this.force = force;
      return this;
    }

    /**
     * How many records one delete statement removes at most (default {@value #DEFAULT_CHUNK_SIZE}).
     */
    public Builder chunkSize(int chunkSize) {
      this.chunkSize = chunkSize;
      return this;
    }

    /**
     * Builds the retention.
     *
     * @throws IllegalStateException if no retention was set
     * @throws IllegalArgumentException if the consumer is blank, a duration is negative, the chunk
     *     size is not positive, or the retention is shorter than the minimum safe retention and not
     *     forced
     */
    public InboxRetention build() {
      Duration r =
          retention.orElseThrow(() ->
              new IllegalStateException(
                  "no retention set for the dedupe records of consumer '" + consumer + "'"));
      if (consumer.isBlank()) {
        throw new IllegalArgumentException("consumer must not be blank");
      }
      if (r.isNegative()) {
        throw new IllegalArgumentException("retention must not be negative: " + r);
      }
      if (minimumSafeRetention.isNegative()) {
        throw new IllegalArgumentException(
            "minimumSafeRetention must not be negative: " + minimumSafeRetention);
      }
      if (chunkSize <= 0) {
        throw new IllegalArgumentException("chunkSize must be positive: " + chunkSize);
      }
      if (r.compareTo(minimumSafeRetention) < 0 && !force) {
        throw new IllegalArgumentException(
            "refusing to keep the dedupe records of consumer '"
                + consumer
                + "' for only "
                + r
                + ", less than the minimum safe retention "
                + minimumSafeRetention
                + " (how long a message can still be redelivered, for Kafka the topic's"
                + " retention.ms): a message redelivered after its dedupe record was purged would"
                + " be applied twice. Keep the records at least "
                + minimumSafeRetention
                + ", or call force(true) if applying a message twice is acceptable");
      }
      return new InboxRetention(this, r);
    }
  }
}
