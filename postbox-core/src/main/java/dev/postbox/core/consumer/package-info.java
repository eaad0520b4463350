/**
 * The consumer API: subscriptions, handlers, deliveries, retry policies, failure handling and
 * dependency guards.
 */
package dev.postbox.core.consumer;
