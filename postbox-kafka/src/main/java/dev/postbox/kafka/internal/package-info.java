/** Implementation details of {@code dev.postbox.kafka}; not an API, may change at any time. */
package dev.postbox.kafka.internal;
