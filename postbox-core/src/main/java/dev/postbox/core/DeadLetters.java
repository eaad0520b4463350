package dev.postbox.core;

import dev.postbox.core.internal.Hashes;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Helpers for dead letters ({@link dev.postbox.core.spi.DeadLetterStore}): the fingerprint that
 * groups similar failures, and the stack trace as text.
 *
 * <p>Stateless and thread-safe.
 */
public final class DeadLetters {

  private static final Pattern UUID =
      Pattern.compile(
          "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
  // 0x-prefixed hex, or a run of 8+ hex digits that contains at least one digit (ids, hashes,
  // addresses), so ordinary words like "deadline" or "accepted" are kept.
  private static final Pattern HEX =
      Pattern.compile("0[xX][0-9a-fA-F]+|\\b(?=[a-fA-F]*[0-9])[0-9a-fA-F]{8,}\\b");
  private static final Pattern DIGITS = Pattern.compile("[0-9]+");

  private DeadLetters() {}

  /**
   * The fingerprint of a failure: the first 16 hex characters of the SHA-256 of the error's class
   * name, its message with UUIDs, hex runs and numbers normalised away, and the origin topic. Two
   * failures that differ only in such values (ids, offsets, amounts) share a fingerprint; failures
   * of different exception classes or topics do not. A null message counts as empty.
   */
  public static String fingerprint(String topic, Throwable error) {
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(error, "error");
    String normalised = normalise(error.getMessage() == null ? "" : error.getMessage());
    String text = error.getClass().getName() + '\n' + normalised + '\n' + topic;
    byte[] hash = Hashes.sha256(text.getBytes(StandardCharsets.UTF_8));
    return HexFormat.of().formatHex(hash, 0, 8);
  }

  /** The message with UUIDs, hex runs and numbers replaced by placeholders. */
  static String normalise(String message) {
    String s = UUID.matcher(message).replaceAll("<uuid>");
    s = HEX.matcher(s).replaceAll("<hex>");
    return DIGITS.matcher(s).replaceAll("<n>");
  }

  /** The stack trace of {@code error} as {@link Throwable#printStackTrace()} prints it. */
  public static String stackTrace(Throwable error) {
    Objects.requireNonNull(error, "error");
    StringWriter out = new StringWriter();
    try (PrintWriter w = new PrintWriter(out)) {
      error.printStackTrace(w);
    }
    return out.toString();
  }
}
