/**
 * The relay engine: lane ownership under leases, the publish pipeline and its meters, driven by
 * {@link dev.postbox.core.relay.Relay} over the {@link dev.postbox.core.spi.RelayStore} and {@link
 * dev.postbox.core.spi.RelayPublisher} SPIs. Used only inside core.
 */
package dev.postbox.core.engine.relay;
