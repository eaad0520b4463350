/**
 * Payload codecs and schema versioning: {@link dev.postbox.core.codec.JsonCodec} turns objects into
 * JSON payloads and back, {@link dev.postbox.core.codec.EventTypes} maps event type names and
 * schema versions to Java classes and upcasts old versions with {@link
 * dev.postbox.core.codec.Upcaster}s, and {@link dev.postbox.core.codec.Decoded} is what decoding a
 * message yields. Failures are {@link dev.postbox.core.DecodingException}s, which are permanent.
 */
package dev.postbox.core.codec;
