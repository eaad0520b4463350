package dev.postbox.core.consumer;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.codec.EventTypes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
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
 * DEDUPLICATED}); shutdown and revocation wait 30 s for records in flight. Immutable and
 * thread-safe.
 *
 * @param name the consumer group id, also the consumer's name in the inbox
 * @param topics topics to read
 * @param guarantee what the subscription promises per message
 * @param ordering how records are ordered
 * @param concurrency most records handled at the same time
 * @param maxInFlight most records read but not finished; above it, reading pauses
 * @param batchSize records per batch for a {@link BatchHandler} (1 = no batching)
 * @param allowedTenants when not empty, messages must carry one of these tenants
 * @param eventTypes the registry for {@link Delivery#decoded()}; when present, unregistered types
 *     are ignored (counted, logged once per type) and never reach the handler
 * @param failureHandler decides retries and receives given-up messages
 * @param inboxRetention how long dedupe records are kept ({@code EFFECTIVELY_ONCE})
 * @param shutdownTimeout how long close and partition revocation wait for records in flight
 * @param idempotencyTtl how long the idempotency store keeps a completed message id and its result
 *     ({@code DEDUPLICATED})
 * @param idempotencyLease the processing lease of a claimed message id ({@code DEDUPLICATED}): the
 *     longest a handler may run; after it another delivery of the id may run the effect again
 */
public record Subscription(
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

  /** Property prefix of {@link #fromProperties}: {@code postbox.subscriptions.<name>.}. */
  public static final String PREFIX = "postbox.subscriptions.";

  public Subscription {
    topics = List.copyOf(topics);
    allowedTenants = Set.copyOf(allowedTenants);
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
    Builder b = builder(name);
    String prefix = PREFIX + name + ".";
    for (String key : properties.stringPropertyNames()) {
      if (!key.startsWith(prefix)) {
        continue;
      }
      String field = key.substring(prefix.length());
      String value = properties.getProperty(key).trim();
      try {
        switch (field) {
          case "topics" -> b.topics(splitList(value).toArray(String[]::new));
          case "guarantee" -> b.guarantee(enumValue(DeliveryGuarantee.class, value));
          case "ordering" -> b.ordering(enumValue(Ordering.class, value));
          case "concurrency" -> b.concurrency(Integer.parseInt(value));
          case "max-in-flight" -> b.maxInFlight(Integer.parseInt(value));
          case "batch-size" -> b.batchSize(Integer.parseInt(value));
          case "tenants" -> b.allowedTenants(Set.copyOf(splitList(value)));
          case "max-attempts" ->
              b.failureHandler(
                  FailureHandlers.of(
                      RetryPolicy.builder().maxAttempts(Integer.parseInt(value)).build()));
          case "inbox-retention" -> b.inboxRetention(Duration.parse(value));
          case "shutdown-timeout" -> b.shutdownTimeout(Duration.parse(value));
          case "idempotency-ttl" -> b.idempotencyTtl(Duration.parse(value));
          case "idempotency-lease" -> b.idempotencyLease(Duration.parse(value));
          default ->
              throw new IllegalArgumentException(
                  "unknown subscription property "
                      + key
                      + " (known: topics, guarantee, ordering,"
                      + " concurrency, max-in-flight, batch-size, tenants, max-attempts,"
                      + " inbox-retention, idempotency-ttl, idempotency-lease,"
                      + " shutdown-timeout)");
        }
      } catch (RuntimeException e) {
        if (e instanceof IllegalArgumentException
            && e.getMessage() != null
            && e.getMessage().startsWith("unknown subscription property")) {
          throw e;
        }
        throw new IllegalArgumentException("bad value for " + key + ": '" + value + "'", e);
      }
    }
    return b;
  }

  private static List<String> splitList(String value) {
    List<String> out = new ArrayList<>();
    for (String s : value.split(",")) {
      if (!s.isBlank()) {
        out.add(s.trim());
      }
    }
    return out;
  }

  private static <E extends Enum<E>> E enumValue(Class<E> type, String value) {
    return Enum.valueOf(type, value.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
  }

  /** Builds a {@link Subscription}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final String name;
    private final Set<String> topics = new LinkedHashSet<>();
    private DeliveryGuarantee guarantee = DeliveryGuarantee.AT_LEAST_ONCE;
    private Ordering ordering = Ordering.KEY;
    private int concurrency = 16;
    private int maxInFlight = 1000;
    private int batchSize = 1;
    private Set<String> allowedTenants = Set.of();
    private EventTypes eventTypes;
    private FailureHandler failureHandler = FailureHandlers.of(RetryPolicy.defaults());
    private Duration inboxRetention = Duration.ofDays(7);
    private Duration shutdownTimeout = Duration.ofSeconds(30);
    private Duration idempotencyTtl = Duration.ofHours(168);
    private Duration idempotencyLease = Duration.ofSeconds(60);

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
