/**
 * The transport-neutral consumer engine and the contract a transport adapter drives ({@link
 * dev.postbox.core.engine.TransportBinding} says what the adapter provides and calls): admission,
 * per-key lanes ({@link dev.postbox.core.engine.KeyedExecutor}), inbox application, the retry loop,
 * parking, dead letters and contiguous-prefix completion ({@link
 * dev.postbox.core.engine.OffsetTracker}), coordinated by {@link
 * dev.postbox.core.engine.DeliveryProcessor}. Used by core and by adapter modules only; front ends
 * use the public API. Not a stable API for applications.
 */
package dev.postbox.core.engine;
