package dev.postbox.admin.internal;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;

/**
 * Keyset cursors as opaque text: the sort key of the last item of a page (a time in microseconds
 * and a tie-breaker), base64url-encoded so front ends pass them on untouched.
 */
final class Cursors {

  private Cursors() {}

  /** A cursor of (time, tie-breaker). */
  record Key(Instant at, String tie) {}

  static String encode(Instant at, String tie) {
    long micros = at.getEpochSecond() * 1_000_000L + at.getNano() / 1_000;
    return Base64.getUrlEncoder()
        .withoutPadding()
        .encodeToString((micros + ":" + tie).getBytes(StandardCharsets.UTF_8));
  }

  static Key decode(String cursor) {
    try {
      String s = new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.UTF_8);
      int colon = s.indexOf(':');
      long micros = Long.parseLong(s.substring(0, colon));
      Instant at =
          Instant.ofEpochSecond(
              Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
      return new Key(at, s.substring(colon + 1));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("not a valid page cursor: '" + cursor + "'", e);
    }
  }

  static String encodeText(String a, String b) {
    return Base64.getUrlEncoder()
        .withoutPadding()
        .encodeToString((a.length() + ":" + a + b).getBytes(StandardCharsets.UTF_8));
  }

  /** The two texts of a cursor made by {@link #encodeText}. */
  static String[] decodeText(String cursor) {
    try {
      String s = new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.UTF_8);
      int colon = s.indexOf(':');
      int n = Integer.parseInt(s.substring(0, colon));
      return new String[] {s.substring(colon + 1, colon + 1 + n), s.substring(colon + 1 + n)};
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("not a valid page cursor: '" + cursor + "'", e);
    }
  }

  static long decodeLong(String cursor) {
    try {
      return Long.parseLong(
          new String(Base64.getUrlDecoder().decode(cursor), StandardCharsets.UTF_8));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("not a valid page cursor: '" + cursor + "'", e);
    }
  }

  static String encodeLong(long v) {
    return Base64.getUrlEncoder()
        .withoutPadding()
        .encodeToString(Long.toString(v).getBytes(StandardCharsets.UTF_8));
  }
}
