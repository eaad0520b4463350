package dev.postbox.core.consumer;

import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Builds {@link FailureHandler}s from a {@link RetryPolicy}: {@code
 * Subscription.builder("billing").failureHandler(FailureHandlers.of(policy))}, or with listeners
 * and a retry budget through {@link #builder()}.
 *
 * <p>The handlers decide like this, for each failed attempt:
 *
 * <ol>
 *   <li>a failure the policy classifies {@link FailureClass#PERMANENT} is given up at once;
 *   <li>a {@link DependencyUnavailableException} in the cause chain (an open circuit breaker, see
 *       {@link DependencyGuard}) is retried after the breaker's remaining wait and is <em>not</em>
 *       counted: neither towards {@link RetryPolicy#maxAttempts()} nor, for the time spent waiting,
 *       towards {@link RetryPolicy#maxDuration()};
 *   <li>any other failure is counted, and given up when {@link RetryPolicy#nextDelay} says so;
 *       otherwise it is retried after the backoff, or, when the retry budget is spent, after the
 *       longer wait until a retry is free.
 * </ol>
 *
 * <p>Attempts and the first-failure time are kept by the handler itself, per message id, never read
 * from message headers (which senders control). They start afresh with the runtime's first attempt
 * ({@link Delivery#attempt()} {@code == 1}) and are dropped when the message is given up. At most
 * {@code maxTrackedMessages} messages are tracked (the least recently failed are forgotten first);
 * one handler belongs to one subscription.
 *
 * <p>Given-up messages go to the {@code onDeadLetter} listener if one is set, otherwise they are
 * logged like {@link FailureHandler}'s default. Undecodable records are logged like {@link
 * FailureHandler}'s default. Handlers are thread-safe.
 */
public final class FailureHandlers {

  /** Default of {@link Builder#maxTrackedMessages(int)}. */
  public static final int DEFAULT_MAX_TRACKED_MESSAGES = 10_000;

  private FailureHandlers() {}

  /** A handler for {@code policy}, with no listeners and no retry budget. */
  public static FailureHandler of(RetryPolicy policy) {
    return builder().retryPolicy(policy).build();
  }

  /** A builder; by default {@link RetryPolicy#defaults()}, no listeners, no retry budget. */
  public static Builder builder() {
    return new Builder();
  }

  /** Builds a {@link FailureHandler}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private RetryPolicy retryPolicy = RetryPolicy.defaults();
    private Consumer<RetryEvent> onRetry = e -> {};
    private Consumer<DeadLetterEvent> onDeadLetter;
    private int retriesPerSecond;
    private int maxTrackedMessages = DEFAULT_MAX_TRACKED_MESSAGES;

    private Builder() {}

    /** The retry policy (default {@link RetryPolicy#defaults()}); its clock is used throughout. */
    public Builder retryPolicy(RetryPolicy retryPolicy) {
      this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
      return this;
    }

    /**
     * Called for every retry, before the wait (default: nothing). Exceptions it throws are logged
     * and ignored.
     */
    public Builder onRetry(Consumer<RetryEvent> listener) {
      this.onRetry = Objects.requireNonNull(listener, "onRetry");
      return this;
    }

    /**
     * Called for every given-up message instead of the default ERROR log. Exceptions it throws
     * reach the runtime.
     */
    public Builder onDeadLetter(Consumer<DeadLetterEvent> listener) {
      this.onDeadLetter = Objects.requireNonNull(listener, "onDeadLetter");
      return this;
    }

    /**
     * Allows at most {@code retriesPerSecond} counted retries a second across the subscription
     * (saving up at most one second's worth); beyond it, retries wait for a free slot (default: no
     * limit). Open-circuit retries do not use the budget.
     */
    public Builder retryBudget(int retriesPerSecond) {
      if (retriesPerSecond < 1) {
        throw new IllegalArgumentException(
            "retriesPerSecond must be >= 1, was " + retriesPerSecond);
      }
      this.retriesPerSecond = retriesPerSecond;
      return this;
    }

    /** Most messages whose failures are tracked at once, at least 1 (default 10,000). */
    public Builder maxTrackedMessages(int maxTrackedMessages) {
      this.maxTrackedMessages = maxTrackedMessages;
      return this;
    }

    /**
     * Builds the handler.
     *
     * @throws IllegalArgumentException if {@code maxTrackedMessages < 1}
     */
    public FailureHandler build() {
      if (maxTrackedMessages < 1) {
        throw new IllegalArgumentException(
            "maxTrackedMessages must be >= 1, was " + maxTrackedMessages);
      }
      Optional<RetryBudget> budget =
          retriesPerSecond > 0
              ? Optional.of(new RetryBudget(retriesPerSecond, retryPolicy.clock()))
              : Optional.empty();
      return new PolicyFailureHandler(
          retryPolicy, budget, onRetry, Optional.ofNullable(onDeadLetter), maxTrackedMessages);
    }
  }
}
