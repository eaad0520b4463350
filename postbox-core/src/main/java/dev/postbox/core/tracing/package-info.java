/** The W3C trace context carried in message headers from the outbox row to the consumer. */
package dev.postbox.core.tracing;
