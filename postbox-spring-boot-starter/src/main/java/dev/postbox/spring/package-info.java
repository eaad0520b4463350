/**
 * Spring Boot auto-configuration of Postbox: the delivery table ({@code postbox.topics.*}) bound
 * and validated at start-up, the outbox on the current Spring transaction, the relay and the
 * consumers as lifecycle beans, health and metrics.
 */
package dev.postbox.spring;
