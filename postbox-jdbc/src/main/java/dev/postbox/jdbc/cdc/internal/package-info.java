/**
 * Implementation details of {@code dev.postbox.jdbc.cdc} (the pgoutput decoder, the commit tracker,
 * the slot streamer, the publishing and marking loops); not an API, may change at any time.
 */
package dev.postbox.jdbc.cdc.internal;
