/**
 * The metrics interface Postbox reports to (no-op by default) and the names and tags of every
 * metric.
 */
package dev.postbox.core.metrics;
