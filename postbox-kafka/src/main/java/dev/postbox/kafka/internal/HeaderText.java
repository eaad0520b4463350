package dev.postbox.kafka.internal;

import static java.time.temporal.ChronoField.HOUR_OF_DAY;
import static java.time.temporal.ChronoField.MINUTE_OF_HOUR;
import static java.time.temporal.ChronoField.NANO_OF_SECOND;
import static java.time.temporal.ChronoField.SECOND_OF_MINUTE;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.chrono.IsoChronology;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.ResolverStyle;
import java.util.UUID;

/**
 * Strict text conversions for header values: UTF-8 that rejects malformed input, RFC 3339
 * timestamps, canonical UUIDs. Methods throw {@link IllegalArgumentException} with a short reason.
 * Stateless and thread-safe.
 */
public final class HeaderText {

  /** RFC 3339 {@code date-time}: seconds required, 0 to 9 fraction digits, {@code Z} or offset. */
  private static final DateTimeFormatter RFC_3339 =
      new DateTimeFormatterBuilder()
          .parseCaseInsensitive()
          .append(DateTimeFormatter.ISO_LOCAL_DATE)
          .appendLiteral('T')
          .appendValue(HOUR_OF_DAY, 2)
          .appendLiteral(':')
          .appendValue(MINUTE_OF_HOUR, 2)
          .appendLiteral(':')
          .appendValue(SECOND_OF_MINUTE, 2)
          .optionalStart()
          .appendFraction(NANO_OF_SECOND, 0, 9, true)
          .optionalEnd()
          .appendOffset("+HH:MM", "Z")
          .toFormatter()
          .withResolverStyle(ResolverStyle.STRICT)
          .withChronology(IsoChronology.INSTANCE);

  private static final long MIN_RFC_3339_SECOND =
      OffsetDateTime.of(0, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC).toEpochSecond();
  private static final long MAX_RFC_3339_SECOND =
      OffsetDateTime.of(9999, 12, 31, 23, 59, 59, 0, ZoneOffset.UTC).toEpochSecond();

  private HeaderText() {}

  /** The bytes as UTF-8 text; malformed or truncated sequences are an error, never replaced. */
  public static String utf8(byte[] bytes) {
    boolean ascii = true;
    for (byte b : bytes) {
      if (b < 0) {
        ascii = false;
        break;
      }
    }
    if (ascii) {
      return new String(bytes, StandardCharsets.US_ASCII);
    }
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("not valid UTF-8");
    }
  }

  /** The text as UTF-8 bytes. */
  public static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /** An RFC 3339 timestamp in UTC ({@code Z}), with as many fraction digits as needed. */
  public static String formatTime(Instant instant) {
    long s = instant.getEpochSecond();
    if (s < MIN_RFC_3339_SECOND || s > MAX_RFC_3339_SECOND) {
      throw new IllegalArgumentException(
          instant + " is outside the years 0000-9999 that RFC 3339 can express");
    }
    return DateTimeFormatter.ISO_INSTANT.format(instant);
  }

  /** Parses an RFC 3339 timestamp with any offset. */
  public static Instant parseTime(String text) {
    try {
      return OffsetDateTime.parse(text, RFC_3339).toInstant();
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(quote(text) + " is not an RFC 3339 timestamp");
    }
  }

  /** Parses a UUID in its canonical 8-4-4-4-12 hexadecimal form (any case). */
  public static UUID parseUuid(String text) {
    if (text.length() != 36) {
      throw new IllegalArgumentException(quote(text) + " is not a UUID");
    }
    for (int i = 0; i < 36; i++) {
      char c = text.charAt(i);
      boolean ok =
          (i == 8 || i == 13 || i == 18 || i == 23)
              ? c == '-'
              : (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      if (!ok) {
        throw new IllegalArgumentException(quote(text) + " is not a UUID");
      }
    }
    return UUID.fromString(text);
  }

  /** The text in single quotes for an error message, cut to 64 characters (input is untrusted). */
  public static String quote(String text) {
    return text.length() <= 64 ? "'" + text + "'" : "'" + text.substring(0, 64) + "...'";
  }

  /** Parses a positive decimal int without sign or leading zeros. */
  public static int parsePositiveInt(String text) {
    int n = text.length();
    if (n == 0 || n > 10 || text.charAt(0) == '0') {
      throw new IllegalArgumentException(quote(text) + " is not a positive integer");
    }
    long value = 0;
    for (int i = 0; i < n; i++) {
      char c = text.charAt(i);
      if (c < '0' || c > '9') {
        throw new IllegalArgumentException(quote(text) + " is not a positive integer");
      }
      value = value * 10 + (c - '0');
    }
    if (value > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(quote(text) + " is too large");
    }
    return (int) value;
  }
}
