package dev.postbox.core.consumer;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The {@link FailureHandler} built by {@link FailureHandlers}. Thread-safe. */
final class PolicyFailureHandler implements FailureHandler {

  private static final Logger log = LoggerFactory.getLogger(PolicyFailureHandler.class);

  /** What the handler remembers of one failing message. Guarded by {@code tracked}. */
  private static final class Tracked {
    final Instant firstFailure;
    int countedAttempts;
    Duration uncountedWait = Duration.ZERO;

    Tracked(Instant firstFailure) {
      this.firstFailure = firstFailure;
    }
  }

  private final RetryPolicy policy;
  private final Optional<RetryBudget> budget;
  private final Consumer<RetryEvent> onRetry;
  private final Optional<Consumer<DeadLetterEvent>> onDeadLetter;
  private final Map<UUID, Tracked> tracked;

  PolicyFailureHandler(
      RetryPolicy policy,
      Optional<RetryBudget> budget,
      Consumer<RetryEvent> onRetry,
      Optional<Consumer<DeadLetterEvent>> onDeadLetter,
      int maxTracked) {
    this(
        policy,
        budget,
        onRetry,
        onDeadLetter,
        new LinkedHashMap<>(16, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<UUID, Tracked> eldest) {
            return size() > maxTracked;
          }
        });
  }

  private PolicyFailureHandler(
      RetryPolicy policy,
      Optional<RetryBudget> budget,
      Consumer<RetryEvent> onRetry,
      Optional<Consumer<DeadLetterEvent>> onDeadLetter,
      Map<UUID, Tracked> tracked) {
    this.policy = policy;
    this.budget = budget;
    this.onRetry = onRetry;
    this.onDeadLetter = onDeadLetter;
    this.tracked = tracked;
  }

  /**
   * A copy whose policy also treats the transport's {@code retriable} errors as transient, sharing
   * this handler's tracked failures, budget and listeners; a policy not built by {@link
   * RetryPolicy#builder()} classifies on its own and is kept.
   */
  @Override
  public FailureHandler withTransientErrors(Predicate<Throwable> retriable) {
    if (!(policy instanceof StandardRetryPolicy standard)) {
      return this;
    }
    return new PolicyFailureHandler(
        standard.withTransportRetriable(retriable), budget, onRetry, onDeadLetter, tracked);
  }

  @Override
  public FailureDecision decide(Delivery delivery, Throwable error) {
    UUID id = delivery.message().id();
    if (policy.classify(error) == FailureClass.PERMANENT) {
      forget(id);
      return new FailureDecision.GiveUp("permanent: " + error, true);
    }
    Optional<DependencyUnavailableException> unavailable = dependencyUnavailable(error);
    Instant now = policy.clock().instant();
    int counted;
    Duration delay;
    synchronized (tracked) {
      Tracked t = delivery.attempt() <= 1 ? null : tracked.get(id);
      if (t == null) {
        t = new Tracked(now);
        tracked.put(id, t);
      }
      if (unavailable.isPresent()) {
        delay = unavailable.get().retryAfter();
        t.uncountedWait = t.uncountedWait.plus(delay);
        counted = t.countedAttempts;
      } else {
        counted = ++t.countedAttempts;
        Optional<Duration> next = policy.nextDelay(counted, t.firstFailure.plus(t.uncountedWait));
        if (next.isEmpty()) {
          tracked.remove(id);
          return new FailureDecision.GiveUp(exhausted(t, now, error));
        }
        delay = next.get();
      }
    }
    RetryEvent.Cause cause;
    if (unavailable.isPresent()) {
      cause = RetryEvent.Cause.DEPENDENCY_UNAVAILABLE;
    } else {
      Duration untilFree = budget.map(RetryBudget::reserve).orElse(Duration.ZERO);
      if (untilFree.compareTo(delay) > 0) {
        delay = untilFree;
        cause = RetryEvent.Cause.RETRY_BUDGET;
      } else {
        cause = RetryEvent.Cause.BACKOFF;
      }
    }
    try {
      onRetry.accept(new RetryEvent(delivery, error, counted, delay, cause));
    } catch (RuntimeException e) {
      log.warn("onRetry listener threw; ignored", e);
    }
    return new FailureDecision.Retry(delay);
  }

  @Override
  public void onGiveUp(Delivery delivery, Throwable error, String reason) {
    forget(delivery.message().id());
    if (onDeadLetter.isPresent()) {
      onDeadLetter
          .get()
          .accept(new DeadLetterEvent(delivery, error, reason, policy.classify(error)));
    } else {
      FailureHandler.super.onGiveUp(delivery, error, reason);
    }
  }

  /** Messages currently tracked (for tests). */
  int trackedCount() {
    synchronized (tracked) {
      return tracked.size();
    }
  }

  private void forget(UUID id) {
    synchronized (tracked) {
      tracked.remove(id);
    }
  }

  private String exhausted(Tracked t, Instant now, Throwable error) {
    if (t.countedAttempts >= policy.maxAttempts()) {
      return "failed " + t.countedAttempts + " attempts (maxAttempts): " + error;
    }
    Duration counting = Duration.between(t.firstFailure, now).minus(t.uncountedWait);
    return "still failing "
        + counting
        + " after the first failure (maxDuration "
        + policy.maxDuration()
        + "), "
        + t.countedAttempts
        + " attempts: "
        + error;
  }

  private static Optional<DependencyUnavailableException> dependencyUnavailable(Throwable error) {
    for (Throwable t : StandardRetryPolicy.causeChain(error)) {
      if (t instanceof DependencyUnavailableException d) {
        return Optional.of(d);
      }
    }
    return Optional.empty();
  }

  @Override
  public String toString() {
    return "FailureHandler[" + policy + (budget.isPresent() ? ", retry budget" : "") + "]";
  }
}
