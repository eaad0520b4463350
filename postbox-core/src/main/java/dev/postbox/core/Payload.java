package dev.postbox.core;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * The body of a message: opaque bytes plus their content type (for example {@code
 * application/json}).
 *
 * <p>Immutable: the bytes are copied in and out. Thread-safe.
 */
public record Payload(byte[] bytes, String contentType) {

  /** Content type of JSON payloads. */
  public static final String JSON = "application/json";

  /** Content type used when none is given. */
  public static final String OCTET_STREAM = "application/octet-stream";

  public Payload {
    Objects.requireNonNull(bytes, "bytes");
    Objects.requireNonNull(contentType, "contentType");
    if (contentType.isBlank()) {
      throw new IllegalArgumentException("contentType must not be blank");
    }
    bytes = bytes.clone();
  }

  /** A payload of {@code bytes} with content type {@value #OCTET_STREAM}. */
  public static Payload of(byte[] bytes) {
    return new Payload(bytes, OCTET_STREAM);
  }

  /** A JSON payload from already encoded JSON text (UTF-8). */
  public static Payload json(String json) {
    return new Payload(json.getBytes(StandardCharsets.UTF_8), JSON);
  }

  /** An empty payload. */
  public static Payload empty() {
    return new Payload(new byte[0], OCTET_STREAM);
  }

  @Override
  public byte[] bytes() {
    return bytes.clone();
  }

  /** The bytes without copying; callers must not modify the array. */
  public byte[] unsafeBytes() {
    return bytes;
  }

  /** Payload size in bytes. */
  public int size() {
    return bytes.length;
  }

  /** The bytes decoded as UTF-8 text. */
  public String asString() {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Payload p
        && contentType.equals(p.contentType)
        && Arrays.equals(bytes, p.bytes);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(bytes) + contentType.hashCode();
  }

  @Override
  public String toString() {
    return "Payload[" + bytes.length + " bytes, " + contentType + "]";
  }
}
