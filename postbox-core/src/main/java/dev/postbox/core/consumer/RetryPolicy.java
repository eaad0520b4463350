package dev.postbox.core.consumer;

import dev.postbox.core.Backoff;
import dev.postbox.core.PermanentMessageException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Which failures are retried, how often, for how long and how far apart. Build one with {@link
 * #builder()} (validated at {@link Builder#build()}) and turn it into a {@link FailureHandler} with
 * {@link FailureHandlers#of(RetryPolicy)} or {@link FailureHandlers#builder()}.
 *
 * <h2>Classification ({@link #classify(Throwable)})</h2>
 *
 * The error and its cause chain are searched, in this order; the first rule that matches decides:
 *
 * <ol>
 *   <li><b>Permanent</b> if any throwable in the chain is a {@link PermanentMessageException}
 *       (undecodable payload, failed validation, rejected tenant, unknown schema version, or a
 *       handler's own poison marker) or an instance of a class given to {@link
 *       Builder#abortOn(Class[])}. So {@code abortOn} wins over {@code retryOn}.
 *   <li><b>Transient</b> if any throwable in the chain is one of:
 *       <ul>
 *         <li>{@link DependencyUnavailableException} (an open circuit breaker);
 *         <li>{@link java.sql.SQLTransientException} (includes deadlocks and serialization failures
 *             reported as {@link java.sql.SQLTransactionRollbackException}), {@link
 *             java.sql.SQLRecoverableException}, or any {@link java.sql.SQLException} whose
 *             SQLState is in class {@code 08} (connection exception) or {@code 40} (transaction
 *             rollback, e.g. PostgreSQL's {@code 40001}/{@code 40P01}, which the PostgreSQL driver
 *             reports as a plain {@code SQLException});
 *         <li>{@link java.util.concurrent.TimeoutException}, {@link
 *             java.net.SocketTimeoutException};
 *         <li>an error the transport declares retriable, when the policy runs in a subscription
 *             (the consumer engine passes the transport adapter's predicate through {@link
 *             FailureHandler#withTransientErrors}; Kafka's: its {@code RetriableException} and
 *             subclasses);
 *         <li>an instance of a class given to {@link Builder#retryOn(Class[])}.
 *       </ul>
 *   <li>Otherwise {@link Builder#retryIf(Predicate)} decides, called with the error itself: {@code
 *       true} is transient. The default predicate answers {@code true}: unknown failures are
 *       retried (and given up when the attempts or the time run out).
 * </ol>
 *
 * Plain {@link java.io.IOException} is deliberately not on the transient list: it also covers parse
 * errors (Jackson's {@code JsonProcessingException} is one) that no retry can fix. Add it with
 * {@code retryOn(IOException.class)} if your handlers only throw it for I/O.
 *
 * <h2>Bounds ({@link #nextDelay(int, Instant)})</h2>
 *
 * A message is given up when it has failed {@link #maxAttempts()} transient attempts, or when the
 * time since its first failure, read from {@link #clock()}, has reached {@link #maxDuration()}.
 * Otherwise the next attempt waits {@link #backoff()}{@code .delay(failedAttempt)}.
 *
 * <p>Defaults: 3 attempts; 1 minute; backoff 100 ms doubling up to 5 s with 50 % jitter; no {@code
 * retryOn}/{@code abortOn} classes; {@code retryIf} always true; the system UTC clock.
 *
 * <p>Implementations are immutable and thread-safe.
 */
public interface RetryPolicy {

  /** Default number of attempts in all (the first one included). */
  int DEFAULT_MAX_ATTEMPTS = 3;

  /** Default time budget, counted from the first failure. */
  Duration DEFAULT_MAX_DURATION = Duration.ofMinutes(1);

  /** Default backoff: 100 ms doubling up to 5 s, 50 % jitter. */
  Backoff DEFAULT_BACKOFF = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), 2, 0.5);

  /** A builder with the defaults above. */
  static Builder builder() {
    return new Builder();
  }

  /** The policy with all the defaults. */
  static RetryPolicy defaults() {
    return builder().build();
  }

  /** Classifies {@code error} as described in the type's documentation. */
  FailureClass classify(Throwable error);

  /**
   * The wait before the next attempt after transient attempt number {@code failedAttempt} (1-based)
   * failed, the first failure of the message having happened at {@code firstFailure}; empty to give
   * up.
   */
  Optional<Duration> nextDelay(int failedAttempt, Instant firstFailure);

  /** Most attempts in all, the first one included. */
  int maxAttempts();

  /** Most time from the first failure to the last retry. */
  Duration maxDuration();

  /** Waits between attempts. */
  Backoff backoff();

  /** The clock that measures {@link #maxDuration()} (and that handlers built on it use). */
  Clock clock();

  /** Builds a {@link RetryPolicy}; validates at {@link #build()}. Not thread-safe. */
  final class Builder {
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private Duration maxDuration = DEFAULT_MAX_DURATION;
    private Backoff backoff = DEFAULT_BACKOFF;
    private final Set<Class<? extends Throwable>> retryOn = new LinkedHashSet<>();
    private final Set<Class<? extends Throwable>> abortOn = new LinkedHashSet<>();
    private Predicate<Throwable> retryIf = t -> true;
    private Clock clock = Clock.systemUTC();

    private Builder() {}

    /** Most attempts in all, at least 1 (default 3; 1 means never retry). */
    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = maxAttempts;
      return this;
    }

    /** Most time from a message's first failure, positive (default 1 minute). */
    public Builder maxDuration(Duration maxDuration) {
      this.maxDuration = Objects.requireNonNull(maxDuration, "maxDuration");
      return this;
    }

    /** Waits between attempts (default 100 ms doubling up to 5 s, 50 % jitter). */
    public Builder backoff(Backoff backoff) {
      this.backoff = Objects.requireNonNull(backoff, "backoff");
      return this;
    }

    /** Adds exception classes (and their subclasses) that are transient. */
    @SafeVarargs
    public final Builder retryOn(Class<? extends Throwable>... types) {
      for (Class<? extends Throwable> t : types) {
        retryOn.add(Objects.requireNonNull(t, "retryOn class"));
      }
      return this;
    }

    /**
     * Adds exception classes (and their subclasses) that are permanent; they win over {@code
     * retryOn} and the built-in transient list.
     */
    @SafeVarargs
    public final Builder abortOn(Class<? extends Throwable>... types) {
      for (Class<? extends Throwable> t : types) {
        abortOn.add(Objects.requireNonNull(t, "abortOn class"));
      }
      return this;
    }

    /**
     * Decides failures that no list matches: {@code true} retries (default: always {@code true}).
     */
    public Builder retryIf(Predicate<Throwable> retryIf) {
      this.retryIf = Objects.requireNonNull(retryIf, "retryIf");
      return this;
    }

    /** The clock that measures the time since the first failure (default: system UTC). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Builds the policy.
     *
     * @throws IllegalArgumentException if {@code maxAttempts < 1}, {@code maxDuration} is not
     *     positive, or a class is both in {@code retryOn} and {@code abortOn}
     */
    public RetryPolicy build() {
      if (maxAttempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be >= 1, was " + maxAttempts);
      }
      if (maxDuration.isNegative() || maxDuration.isZero()) {
        throw new IllegalArgumentException("maxDuration must be positive, was " + maxDuration);
      }
      List<String> both = new ArrayList<>();
      for (Class<? extends Throwable> c : retryOn) {
        if (abortOn.contains(c)) {
          both.add(c.getName());
        }
      }
      if (!both.isEmpty()) {
        throw new IllegalArgumentException(
            "classes both in retryOn and abortOn (choose one): " + both);
      }
      return new StandardRetryPolicy(
          maxAttempts,
          maxDuration,
          backoff,
          Collections.unmodifiableSet(new LinkedHashSet<>(retryOn)),
          Collections.unmodifiableSet(new LinkedHashSet<>(abortOn)),
          retryIf,
          clock);
    }
  }
}
