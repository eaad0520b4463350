/**
 * The relay API: publishes outbox rows to a broker, with its listener and the unpublishable-rows
 * view.
 */
package dev.postbox.core.relay;
