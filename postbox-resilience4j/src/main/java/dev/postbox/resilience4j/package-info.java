/**
 * The circuit breakers of {@link dev.postbox.core.consumer.DependencyGuard}, on Resilience4j
 * (optional integration: add this module to use {@code DependencyGuard.builder()}).
 */
package dev.postbox.resilience4j;
