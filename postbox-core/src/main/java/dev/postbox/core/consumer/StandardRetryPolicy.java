package dev.postbox.core.consumer;

import dev.postbox.core.Backoff;
import dev.postbox.core.PermanentMessageException;
import java.net.SocketTimeoutException;
import java.sql.SQLException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

/** The {@link RetryPolicy} built by {@link RetryPolicy.Builder}. Immutable and thread-safe. */
final class StandardRetryPolicy implements RetryPolicy {

  private static final List<Class<? extends Throwable>> BUILT_IN_TRANSIENT =
      List.of(
          DependencyUnavailableException.class,
          SQLTransientException.class,
          SQLRecoverableException.class,
          TimeoutException.class,
          SocketTimeoutException.class);

  private final int maxAttempts;
  private final Duration maxDuration;
  private final Backoff backoff;
  private final Set<Class<? extends Throwable>> retryOn;
  private final Set<Class<? extends Throwable>> abortOn;
  private final Predicate<Throwable> retryIf;
  private final Clock clock;
  private final Predicate<Throwable> transportRetriable;

  StandardRetryPolicy(
      int maxAttempts,
      Duration maxDuration,
      Backoff backoff,
      Set<Class<? extends Throwable>> retryOn,
      Set<Class<? extends Throwable>> abortOn,
      Predicate<Throwable> retryIf,
      Clock clock) {
    this(maxAttempts, maxDuration, backoff, retryOn, abortOn, retryIf, clock, t -> false);
  }

  private StandardRetryPolicy(
      int maxAttempts,
      Duration maxDuration,
      Backoff backoff,
      Set<Class<? extends Throwable>> retryOn,
      Set<Class<? extends Throwable>> abortOn,
      Predicate<Throwable> retryIf,
      Clock clock,
      Predicate<Throwable> transportRetriable) {
    this.maxAttempts = maxAttempts;
    this.maxDuration = maxDuration;
    this.backoff = backoff;
    this.retryOn = retryOn;
    this.abortOn = abortOn;
    this.retryIf = retryIf;
    this.clock = clock;
    this.transportRetriable = transportRetriable;
  }

  /**
   * This policy for a transport whose errors matching {@code retriable} (tested against each
   * throwable of the cause chain) are transient, ranked with the built-in transient list.
   */
  StandardRetryPolicy withTransportRetriable(Predicate<Throwable> retriable) {
    return new StandardRetryPolicy(
        maxAttempts,
        maxDuration,
        backoff,
        retryOn,
        abortOn,
        retryIf,
        clock,
        Objects.requireNonNull(retriable, "retriable"));
  }

  @Override
  public FailureClass classify(Throwable error) {
    List<Throwable> chain = causeChain(error);
    for (Throwable t : chain) {
      if (t instanceof PermanentMessageException || isInstanceOfAny(t, abortOn)) {
        return FailureClass.PERMANENT;
      }
    }
    for (Throwable t : chain) {
      if (isInstanceOfAny(t, BUILT_IN_TRANSIENT)
          || isTransientSqlState(t)
          || transportRetriable.test(t)
          || isInstanceOfAny(t, retryOn)) {
        return FailureClass.TRANSIENT;
      }
    }
    return retryIf.test(error) ? FailureClass.TRANSIENT : FailureClass.PERMANENT;
  }

  @Override
  public Optional<Duration> nextDelay(int failedAttempt, Instant firstFailure) {
    if (failedAttempt < 1) {
      throw new IllegalArgumentException("failedAttempt must be >= 1, was " + failedAttempt);
    }
    if (failedAttempt >= maxAttempts || durationExhausted(firstFailure)) {
      return Optional.empty();
    }
    return Optional.of(backoff.delay(failedAttempt, ThreadLocalRandom.current()));
  }

  /** Whether the time since {@code firstFailure} has reached {@code maxDuration}. */
  boolean durationExhausted(Instant firstFailure) {
    return Duration.between(firstFailure, clock.instant()).compareTo(maxDuration) >= 0;
  }

  @Override
  public int maxAttempts() {
    return maxAttempts;
  }

  @Override
  public Duration maxDuration() {
    return maxDuration;
  }

  @Override
  public Backoff backoff() {
    return backoff;
  }

  @Override
  public Clock clock() {
    return clock;
  }

  @Override
  public String toString() {
    return "RetryPolicy[maxAttempts="
        + maxAttempts
        + ", maxDuration="
        + maxDuration
        + ", backoff="
        + backoff
        + ", retryOn="
        + retryOn
        + ", abortOn="
        + abortOn
        + "]";
  }

  /** The error and its causes, each once (cause cycles are cut). */
  static List<Throwable> causeChain(Throwable error) {
    List<Throwable> chain = new ArrayList<>();
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    for (Throwable t = error; t != null && seen.add(t); t = t.getCause()) {
      chain.add(t);
    }
    return chain;
  }

  private static boolean isInstanceOfAny(
      Throwable t, Iterable<Class<? extends Throwable>> classes) {
    for (Class<? extends Throwable> c : classes) {
      if (c.isInstance(t)) {
        return true;
      }
    }
    return false;
  }

  private static boolean isTransientSqlState(Throwable t) {
    if (t instanceof SQLException e && e.getSQLState() != null) {
      String state = e.getSQLState();
      return state.startsWith("08") || state.startsWith("40");
    }
    return false;
  }
}
