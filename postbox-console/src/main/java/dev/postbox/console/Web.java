package dev.postbox.console;

import java.util.Optional;
import java.util.UUID;

/** Request parameters into the API's types (bad input is an IllegalArgumentException: 400). */
final class Web {

  private Web() {}

  static Optional<String> text(String v) {
    return v == null || v.isBlank() ? Optional.empty() : Optional.of(v.trim());
  }

  static UUID uuid(String v) {
    try {
      return UUID.fromString(v);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("not a message id (UUID): " + v, e);
    }
  }

  /** The text as a UUID, or empty when it is not one. */
  static Optional<UUID> uuidOrEmpty(String v) {
    try {
      return Optional.of(UUID.fromString(v));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  static String reason(String v) {
    return text(v).orElseThrow(() -> new IllegalArgumentException("give a reason"));
  }

  static String urlEncode(String v) {
    return java.net.URLEncoder.encode(v, java.nio.charset.StandardCharsets.UTF_8);
  }
}
