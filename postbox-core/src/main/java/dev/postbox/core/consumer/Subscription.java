package dev.postbox.core.consumer;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.codec.EventTypes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

/**
 * How one consumer (a consumer group) reads its topics: the delivery guarantee, ordering,
 * concurrency and the rest. Set in code with {@link #builder(String)} or declaratively with {@link
 * #fromProperties(String, Properties)}.
 *
 * <p>Defaults: {@link DeliveryGuarantee#AT_LEAST_ONCE}; {@link Ordering#KEY}; concurrency 16; at
 * most 1,000 records in flight (then partitions are paused); batch size 1 (no batching); no tenant
 * requirement; {@code FailureHandlers.of(RetryPolicy.defaults())} (3 attempts within 1 min, 100 ms
 * doubling to 5 s); inbox retention 7 days; idempotency TTL 168 hours and lease 60 s ({@code
 * DEDUPLICATED}); shutdown and revocation wait 30 s for records in flight. Each is a {@code
 * DEFAULT_*} constant here.
 *
 * <p>Built only by its {@link Builder} (no public constructor), so every subscription passed its
 * {@link Builder#build()} checks. Immutable and thread-safe; equal when all settings are equal.
 */
public final class Subscription {

  /** Property prefix of {@link #fromProperties}: {@code postbox.subscriptions.<name>.}. */
  public static final String PREFIX = "postbox.subscriptions.";

  /** Default delivery guarantee. */
  public static final DeliveryGuarantee DEFAULT_GUARANTEE = DeliveryGuarantee.AT_LEAST_ONCE;

  /** Default ordering: per key, keys in parallel. */
  public static final Ordering DEFAULT_ORDERING = Ordering.KEY;

  /** Default most records handled at the same time. */
  public static final int DEFAULT_CONCURRENCY = 16;

  /** Default most records read but not finished before partitions pause. */
  public static final int DEFAULT_MAX_IN_FLIGHT = 1_000;

  /** Default batch size: 1, no batching. */
  public static final int DEFAULT_BATCH_SIZE = 1;

  /** Default time inbox dedupe records are kept. */
  public static final Duration DEFAULT_INBOX_RETENTION = Duration.ofDays(7);

  /** Default time close and revocation wait for records in flight. */
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);

  /** Default time a completed message id and its result are kept ({@code DEDUPLICATED}). */
  public static final Duration DEFAULT_IDEMPOTENCY_TTL = Duration.ofDays(7);

  /** Default processing lease of a claimed message id ({@code DEDUPLICATED}). */
  public static final Duration DEFAULT_IDEMPOTENCY_LEASE = Duration.ofSeconds(60);

  private final String name;
  private final List<String> topics;
  private final DeliveryGuarantee guarantee;
  private final Ordering ordering;
  private final int concurrency;
  private final int maxInFlight;
  private final int batchSize;
  private final Set<String> allowedTenants;
  private final Optional<EventTypes> eventTypes;
  private final FailureHandler failureHandler;
  private final Duration inboxRetention;
  private final Duration shutdownTimeout;
  private final Duration idempotencyTtl;
  private final Duration idempotencyLease;

  private Subscription(
      String name,
      List<String> topics,
      DeliveryGuarantee guarantee,
      Ordering ordering,
      int concurrency,
      int maxInFlight,
      int batchSize,
      Set<String> allowedTenants,
      Optional<EventTypes> eventTypes,
      FailureHandler failureHandler,
      Duration inboxRetention,
      Duration shutdownTimeout,
      Duration idempotencyTtl,
      Duration idempotencyLease) {
    this.name = name;
    this.topics = List.copyOf(topics);
    this.guarantee = guarantee;
    this.ordering = ordering;
    this.concurrency = concurrency;
    this.maxInFlight = maxInFlight;
    this.batchSize = batchSize;
    this.allowedTenants = Set.copyOf(allowedTenants);
    this.eventTypes = eventTypes;
    this.failureHandler = failureHandler;
    this.inboxRetention = inboxRetention;
    this.shutdownTimeout = shutdownTimeout;
    this.idempotencyTtl = idempotencyTtl;
    this.idempotencyLease = idempotencyLease;
  }

  /** The consumer group id, also the consumer's name in the inbox. */
  public String name() {
    return name;
  }

  /** Topics to read. */
  public List<String> topics() {
    return topics;
  }

  /** What the subscription promises per message. */
  public DeliveryGuarantee guarantee() {
    return guarantee;
  }

  /** How records are ordered. */
  public Ordering ordering() {
    return ordering;
  }

  /** Most records handled at the same time. */
  public int concurrency() {
    return concurrency;
  }

  /** Most records read but not finished; above it, reading pauses. */
  public int maxInFlight() {
    return maxInFlight;
  }

  /** Records per batch for a {@link BatchHandler} (1 = no batching). */
  public int batchSize() {
    return batchSize;
  }

  /** When not empty, messages must carry one of these tenants. */
  public Set<String> allowedTenants() {
    return allowedTenants;
  }

  /**
   * The registry for {@link Delivery#decoded()}; when present, unregistered types are ignored
   * (counted, logged once per type) and never reach the handler.
   */
  public Optional<EventTypes> eventTypes() {
    return eventTypes;
  }

  /** Decides retries and receives given-up messages. */
  public FailureHandler failureHandler() {
    return failureHandler;
  }

  /** How long dedupe records are kept ({@code EFFECTIVELY_ONCE}). */
  public Duration inboxRetention() {
    return inboxRetention;
  }

  /** How long close and partition revocation wait for records in flight. */
  public Duration shutdownTimeout() {
    return shutdownTimeout;
  }

  /**
   * How long the idempotency store keeps a completed message id and its result ({@code
   * DEDUPLICATED}).
   */
  public Duration idempotencyTtl() {
    return idempotencyTtl;
  }

  /**
   * The processing lease of a claimed message id ({@code DEDUPLICATED}): the longest a handler may
   * run; after it another delivery of the id may run the effect again.
   */
  public Duration idempotencyLease() {
    return idempotencyLease;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof Subscription o
        && name.equals(o.name)
        && topics.equals(o.topics)
        && guarantee.equals(o.guarantee)
        && ordering.equals(o.ordering)
        && concurrency == o.concurrency
        && maxInFlight == o.maxInFlight
        && batchSize == o.batchSize
        && allowedTenants.equals(o.allowedTenants)
        && eventTypes.equals(o.eventTypes)
        && failureHandler.equals(o.failureHandler)
        && inboxRetention.equals(o.inboxRetention)
        && shutdownTimeout.equals(o.shutdownTimeout)
        && idempotencyTtl.equals(o.idempotencyTtl)
        && idempotencyLease.equals(o.idempotencyLease);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        name,
        topics,
        guarantee,
        ordering,
        concurrency,
        maxInFlight,
        batchSize,
        allowedTenants,
        eventTypes,
        failureHandler,
        inboxRetention,
        shutdownTimeout,
        idempotencyTtl,
        idempotencyLease);
  }

  @Override
  public String toString() {
    return "Subscription["
        + "name="
        + name
        + ", topics="
        + topics
        + ", guarantee="
        + guarantee
        + ", ordering="
        + ordering
        + ", concurrency="
        + concurrency
        + ", maxInFlight="
        + maxInFlight
        + ", batchSize="
        + batchSize
        + ", allowedTenants="
        + allowedTenants
        + ", eventTypes="
        + eventTypes
        + ", failureHandler="
        + failureHandler
        + ", inboxRetention="
        + inboxRetention
        + ", shutdownTimeout="
        + shutdownTimeout
        + ", idempotencyTtl="
        + idempotencyTtl
        + ", idempotencyLease="
        + idempotencyLease
        + "]";
  }

  /** A builder for the subscription (and consumer group) {@code name}. */
  public static Builder builder(String name) {
    return new Builder(name);
  }

  /**
   * Reads a subscription from properties under {@code postbox.subscriptions.<name>.}: {@code
   * topics} (comma separated, required), {@code guarantee} ({@code at-most-once}, {@code
   * at-least-once}, {@code effectively-once}, {@code deduplicated}), {@code ordering} ({@code key},
   * {@code partition}, {@code unordered}), {@code concurrency}, {@code max-in-flight}, {@code
   * batch-size}, {@code tenants} (comma separated), {@code max-attempts}, {@code inbox-retention},
   * {@code idempotency-ttl}, {@code idempotency-lease} and {@code shutdown-timeout} (ISO-8601
   * durations such as {@code P7D}, {@code PT30S}). Unknown keys under the prefix are refused, so a
   * typo fails at start instead of being ignored. Code-only settings (event types, a custom failure
   * handler) can be added to the returned builder.
   */
  public static Builder fromProperties(String name, Properties properties) {
    return SubscriptionProperties.read(name, properties);
  }

  /** Builds a {@link Subscription}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final String name;
    private final Set<String> topics = new LinkedHashSet<>();
    private DeliveryGuarantee guarantee = DEFAULT_GUARANTEE;
    private Ordering ordering = DEFAULT_ORDERING;
    private int concurrency = DEFAULT_CONCURRENCY;
    private int maxInFlight = DEFAULT_MAX_IN_FLIGHT;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private Set<String> allowedTenants = Set.of();
    private EventTypes eventTypes;
    private FailureHandler failureHandler = FailureHandlers.of(RetryPolicy.defaults());
    private Duration inboxRetention = DEFAULT_INBOX_RETENTION;
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    private Duration idempotencyTtl = DEFAULT_IDEMPOTENCY_TTL;
    private Duration idempotencyLease = DEFAULT_IDEMPOTENCY_LEASE;

    private Builder(String name) {
      this.name = name;
    }

    /** Adds topics to read. */
    public Builder topics(String... topics) {
      for (String t : topics) {
        this.topics.add(Objects.requireNonNull(t, "topic"));
      }
      return this;
    }

    /** Sets the delivery guarantee (default {@code AT_LEAST_ONCE}). */
    public Builder guarantee(DeliveryGuarantee guarantee) {
      this.guarantee = Objects.requireNonNull(guarantee, "guarantee");
      return this;
    }

    /** Sets the ordering (default {@code KEY}). */
    public Builder ordering(Ordering ordering) {
      this.ordering = Objects.requireNonNull(ordering, "ordering");
      return this;
    }

    /** Sets the most records handled at the same time (default 16). */
    public Builder concurrency(int concurrency) {
      this.concurrency = concurrency;
      return this;
    }

    /** Sets the most records read but not finished before partitions pause (default 1,000). */
    public Builder maxInFlight(int maxInFlight) {
      this.maxInFlight = maxInFlight;
      return this;
    }

    /** Sets the batch size for a batch handler (default 1: no batching). */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /** Requires every message to carry one of {@code tenants} (default: no requirement). */
    public Builder allowedTenants(Set<String> tenants) {
      this.allowedTenants = Set.copyOf(tenants);
      return this;
    }

    /** Sets the event type registry (default: none; handlers read raw messages). */
    public Builder eventTypes(EventTypes eventTypes) {
      this.eventTypes = Objects.requireNonNull(eventTypes, "eventTypes");
      return this;
    }

    /** Sets the failure handler (default {@code FailureHandlers.of(RetryPolicy.defaults())}). */
    public Builder failureHandler(FailureHandler failureHandler) {
      this.failureHandler = Objects.requireNonNull(failureHandler, "failureHandler");
      return this;
    }

    /** Sets how long inbox dedupe records are kept (default 7 days). */
    public Builder inboxRetention(Duration inboxRetention) {
      this.inboxRetention = Objects.requireNonNull(inboxRetention, "inboxRetention");
      return this;
    }

    /** Sets how long close and revocation wait for records in flight (default 30 s). */
    public Builder shutdownTimeout(Duration shutdownTimeout) {
      this.shutdownTimeout = Objects.requireNonNull(shutdownTimeout, "shutdownTimeout");
      return this;
    }

    /**
     * Sets how long a completed message id and its result are kept in the idempotency store ({@code
     * DEDUPLICATED}; default 168 hours). Must be at least the topics' retention (checked at start)
     * and longer than the lease.
     */
    public Builder idempotencyTtl(Duration idempotencyTtl) {
      this.idempotencyTtl = Objects.requireNonNull(idempotencyTtl, "idempotencyTtl");
      return this;
    }

    /**
     * Sets the processing lease of a claimed message id ({@code DEDUPLICATED}; default 60 s): the
     * longest a handler may take. A duplicate delivered meanwhile waits for it; once it expires
     * without completion (a crash), the next delivery runs the effect again.
     */
    public Builder idempotencyLease(Duration idempotencyLease) {
      this.idempotencyLease = Objects.requireNonNull(idempotencyLease, "idempotencyLease");
      return this;
    }

    /** Validates and builds the subscription. */
    public Subscription build() {
      List<String> problems = new ArrayList<>();
      if (name == null || name.isBlank()) {
        problems.add("name must not be blank");
      }
      if (topics.isEmpty()) {
        problems.add("at least one topic is required");
      }
      if (concurrency < 1 || concurrency > 10_000) {
        problems.add("concurrency must be in [1, 10000], was " + concurrency);
      }
      if (maxInFlight < concurrency) {
        problems.add(
            "maxInFlight (" + maxInFlight + ") must be >= concurrency (" + concurrency + ")");
      }
      if (batchSize < 1 || batchSize > maxInFlight) {
        problems.add("batchSize must be in [1, maxInFlight], was " + batchSize);
      }
      if (inboxRetention.isNegative() || inboxRetention.isZero()) {
        problems.add("inboxRetention must be positive");
      }
      if (shutdownTimeout.isNegative()) {
        problems.add("shutdownTimeout must not be negative");
      }
      if (idempotencyLease.isNegative() || idempotencyLease.isZero()) {
        problems.add("idempotencyLease must be positive");
      }
      if (idempotencyTtl.compareTo(idempotencyLease) <= 0) {
        problems.add(
            "idempotencyTtl ("
                + idempotencyTtl
                + ") must be longer than idempotencyLease ("
                + idempotencyLease
                + ")");
      }
      if (guarantee == DeliveryGuarantee.DEDUPLICATED && batchSize > 1) {
        problems.add("DEDUPLICATED claims one message at a time: batchSize must be 1");
      }
      if (guarantee == DeliveryGuarantee.AT_MOST_ONCE && batchSize > 1) {
        problems.add("batching needs AT_LEAST_ONCE or EFFECTIVELY_ONCE");
      }
      if (!problems.isEmpty()) {
        throw new IllegalArgumentException(
            "invalid subscription '" + name + "': " + String.join("; ", problems));
      }
      return new Subscription(
          name,
          List.copyOf(topics),
          guarantee,
          ordering,
          concurrency,
          maxInFlight,
          batchSize,
          allowedTenants,
          Optional.ofNullable(eventTypes),
          failureHandler,
          inboxRetention,
          shutdownTimeout,
          idempotencyTtl,
          idempotencyLease);
    }
  }
}
