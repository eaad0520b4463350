package dev.postbox.resilience4j;

import dev.postbox.core.consumer.DependencyGuard;
import dev.postbox.core.spi.DependencyGuardProvider;

/**
 * Provides {@link DependencyGuard}s on Resilience4j circuit breakers to {@link
 * DependencyGuard#builder()}.
 *
 * <p><b>Why a {@link java.util.ServiceLoader} provider</b> rather than an explicit factory such as
 * {@code Resilience4jGuards.circuitBreaker(...)}: {@code DependencyGuard.builder()...build()} is
 * the public API applications already call, and it keeps working unchanged (same defaults, same
 * validation, same behaviour) once this module is on the class path; an explicit factory would have
 * made every caller change its code to keep a circuit breaker. Core stays free of resilience4j and
 * says which module to add when none is found. The class is public with a public constructor, as
 * {@code ServiceLoader} requires; an application that cannot use service files (a shaded jar that
 * drops them) can also call {@link #create(DependencyGuard.Settings)} itself.
 */
public final class Resilience4jGuardProvider implements DependencyGuardProvider {

  /** Called by {@link java.util.ServiceLoader}. */
  public Resilience4jGuardProvider() {}

  @Override
  public DependencyGuard create(DependencyGuard.Settings settings) {
    return new CircuitBreakerDependencyGuard(settings);
  }
}
