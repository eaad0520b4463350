package dev.postbox.core.consumer;

import dev.postbox.core.PostboxException;
import java.time.Duration;
import java.util.Objects;

/**
 * A call to a dependency was not made because its circuit breaker is open (the dependency failed
 * too often recently). A transient failure: a {@link FailureHandlers} handler retries after {@link
 * #retryAfter()} without counting it as an attempt. Thrown by {@link DependencyGuard}.
 *
 * <p>Immutable once thrown.
 */
public class DependencyUnavailableException extends PostboxException {

  private final String dependency;
  private final Duration retryAfter;

  /**
   * A refused call to {@code dependency}, worth trying again after {@code retryAfter} (not
   * negative).
   */
  public DependencyUnavailableException(String dependency, Duration retryAfter) {
    super(
        "dependency '"
            + Objects.requireNonNull(dependency, "dependency")
            + "' is unavailable (circuit breaker open); retry after "
            + Objects.requireNonNull(retryAfter, "retryAfter"));
    if (retryAfter.isNegative()) {
      throw new IllegalArgumentException("retryAfter must not be negative, was " + retryAfter);
    }
    this.dependency = dependency;
    this.retryAfter = retryAfter;
  }

  /** The name of the dependency, as passed to {@link DependencyGuard#call}. */
  public String dependency() {
    return dependency;
  }

  /** How long until the circuit breaker lets a probe call through. */
  public Duration retryAfter() {
    return retryAfter;
  }
}
