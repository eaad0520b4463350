package dev.postbox.spring;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import java.time.Duration;
import java.util.Optional;

/**
 * One row of the delivery table ({@code postbox.topics.<topic>.*}): the topic's guarantee, whether
 * its messages go through the outbox, and how its consumers retry, order and give up. Defaults are
 * the library's ({@code Subscription.DEFAULT_*}, {@code RetryPolicy.DEFAULT_*}).
 */
public class TopicProperties {

  /** What the topic promises about each message. */
  private DeliveryGuarantee guarantee = Subscription.DEFAULT_GUARANTEE;

  /**
   * Whether messages of this topic are written to the transactional outbox; unset: yes, unless the
   * guarantee is at-most-once.
   */
  private Boolean outbox;

  /** How long a DEDUPLICATED consumer keeps a completed message id (at least the retention). */
  private Duration idempotencyTtl = Subscription.DEFAULT_IDEMPOTENCY_TTL;

  /** How long an EFFECTIVELY_ONCE consumer keeps its dedupe records (at least the retention). */
  private Duration inboxRetention = Subscription.DEFAULT_INBOX_RETENTION;

  /** Retries after the first attempt before the consumer gives up (0: never retry). */
  private int maxRetries = RetryPolicy.DEFAULT_MAX_ATTEMPTS - 1;

  /** Wait between a consumer's attempts. */
  private final BackoffSettings backoff = new BackoffSettings();

  /** Order of handling: per KEY (keys in parallel), per PARTITION, or UNORDERED. */
  private Ordering ordering = Subscription.DEFAULT_ORDERING;

  /** Records handled at once (virtual threads). */
  private int concurrency = Subscription.DEFAULT_CONCURRENCY;

  /** Whether given-up messages are kept in postbox_dead_letter (otherwise only logged). */
  private boolean deadLetters;

  /** Whether a key whose retries ran out is parked, in order, and retried as a sequence. */
  private boolean parking;

  public DeliveryGuarantee getGuarantee() {
    return guarantee;
  }

  public void setGuarantee(DeliveryGuarantee guarantee) {
    this.guarantee = guarantee;
  }

  public Boolean getOutbox() {
    return outbox;
  }

  public void setOutbox(Boolean outbox) {
    this.outbox = outbox;
  }

  /** Whether the outbox was set explicitly. */
  public Optional<Boolean> explicitOutbox() {
    return Optional.ofNullable(outbox);
  }

  /** Whether messages of this topic go through the outbox (set, or derived from the guarantee). */
  public boolean usesOutbox() {
    return explicitOutbox().orElse(guarantee != DeliveryGuarantee.AT_MOST_ONCE);
  }

  public Duration getIdempotencyTtl() {
    return idempotencyTtl;
  }

  public void setIdempotencyTtl(Duration idempotencyTtl) {
    this.idempotencyTtl = idempotencyTtl;
  }

  public Duration getInboxRetention() {
    return inboxRetention;
  }

  public void setInboxRetention(Duration inboxRetention) {
    this.inboxRetention = inboxRetention;
  }

  public int getMaxRetries() {
    return maxRetries;
  }

  public void setMaxRetries(int maxRetries) {
    this.maxRetries = maxRetries;
  }

  public BackoffSettings getBackoff() {
    return backoff;
  }

  public Ordering getOrdering() {
    return ordering;
  }

  public void setOrdering(Ordering ordering) {
    this.ordering = ordering;
  }

  public int getConcurrency() {
    return concurrency;
  }

  public void setConcurrency(int concurrency) {
    this.concurrency = concurrency;
  }

  public boolean isDeadLetters() {
    return deadLetters;
  }

  public void setDeadLetters(boolean deadLetters) {
    this.deadLetters = deadLetters;
  }

  public boolean isParking() {
    return parking;
  }

  public void setParking(boolean parking) {
    this.parking = parking;
  }

  /** A consumer's wait between attempts: {@code initial * multiplier^n}, at most {@code max}. */
  public static class BackoffSettings {
    /** Wait before the first retry. */
    private Duration initial = RetryPolicy.DEFAULT_BACKOFF.initial();

    /** Longest wait. */
    private Duration max = RetryPolicy.DEFAULT_BACKOFF.max();

    /** Growth factor per attempt (at least 1). */
    private double multiplier = RetryPolicy.DEFAULT_BACKOFF.multiplier();

    /** Random share of each wait, in [0, 1]. */
    private double jitter = RetryPolicy.DEFAULT_BACKOFF.jitter();

    public Duration getInitial() {
      return initial;
    }

    public void setInitial(Duration initial) {
      this.initial = initial;
    }

    public Duration getMax() {
      return max;
    }

    public void setMax(Duration max) {
      this.max = max;
    }

    public double getMultiplier() {
      return multiplier;
    }

    public void setMultiplier(double multiplier) {
      this.multiplier = multiplier;
    }

    public double getJitter() {
      return jitter;
    }

    public void setJitter(double jitter) {
      this.jitter = jitter;
    }

    /** As the library's {@link Backoff} (its constructor checks the values). */
    public Backoff toBackoff() {
      return new Backoff(initial, max, multiplier, jitter);
    }
  }
}
