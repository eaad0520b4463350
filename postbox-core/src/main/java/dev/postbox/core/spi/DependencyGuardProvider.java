package dev.postbox.core.spi;

import dev.postbox.core.consumer.DependencyGuard;

/**
 * Makes the circuit breakers behind {@link DependencyGuard#builder()}: core keeps the guard's API
 * and validates its settings, an optional module implements the breakers. {@code
 * postbox-resilience4j} is the implementation; it registers itself in {@code
 * META-INF/services/dev.postbox.core.spi.DependencyGuardProvider}, so an application that adds the
 * module calls {@code DependencyGuard.builder()...build()} as before.
 *
 * <p>Found with {@link java.util.ServiceLoader} (core's class loader first, then the thread's
 * context class loader); the first provider found is used. Implementations must have a public
 * no-argument constructor and return thread-safe guards.
 */
public interface DependencyGuardProvider {

  /** A new guard with {@code settings} (already validated). */
  DependencyGuard create(DependencyGuard.Settings settings);
}
