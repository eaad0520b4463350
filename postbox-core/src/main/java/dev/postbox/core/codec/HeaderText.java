package dev.postbox.core.codec;

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
 * Stateless and thread-safe. One copy for every transport adapter's mapping (Kafka headers, AMQP
 * headers), so that both read a header exactly alike.
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

  /** The value of each ASCII hexadecimal digit (either case); -1 for every other character. */
  private static final byte[] HEX = new byte['f' + 1];

  static {
    java.util.Arrays.fill(HEX, (byte) -1);
    for (int d = 0; d < 10; d++) {
      HEX['0' + d] = (byte) d;
    }
    for (int d = 0; d < 6; d++) {
      HEX['a' + d] = (byte) (10 + d);
      HEX['A' + d] = (byte) (10 + d);
    }
  }

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

  /**
   * Parses an RFC 3339 timestamp with any offset. The instant must be one {@link #formatTime} can
   * write back (years 0000 to 9999 in UTC), so that whatever is read can be published again: the
   * formatter alone accepted {@code +10000-01-01T00:00:00Z} (found by fuzzing).
   */
  public static Instant parseTime(String text) {
    Instant fast = parseUtcTime(text);
    return fast != null ? fast : parseWithFormatter(text);
  }

  /**
   * {@link #parseTime} by the RFC 3339 formatter alone, without the fast path: the reference the
   * fast path is tested against.
   */
  static Instant parseWithFormatter(String text) {
    Instant parsed;
    try {
      parsed = OffsetDateTime.parse(text, RFC_3339).toInstant();
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(quote(text) + " is not an RFC 3339 timestamp");
    }
    long s = parsed.getEpochSecond();
    if (s < MIN_RFC_3339_SECOND || s > MAX_RFC_3339_SECOND) {
      throw new IllegalArgumentException(
          quote(text) + " is outside the years 0000-9999 in UTC that RFC 3339 can express");
    }
    return parsed;
  }

  /**
   * The form {@link #formatTime} writes ({@code yyyy-MM-ddTHH:mm:ss[.f{1,9}]Z}, upper case), read
   * without the formatter: it is on every consumed record, and the formatter cost about a tenth of
   * the consumer's CPU per record. Null for anything else, valid or not (the formatter decides).
   */
  static Instant parseUtcTime(String t) {
    // ISO-8859-1 writes '?' for every character beyond it, which this form has not
    return t.length() > 30 ? null : utcTime(t.getBytes(StandardCharsets.ISO_8859_1));
  }

  /**
   * {@link #parseUtcTime} straight from a header value's bytes (ASCII), without a String: null
   * (including for null) when they are not that form, and then {@link #parseTime} of their text
   * decides.
   */
  public static Instant utcTime(byte[] t) {
    if (t == null) {
      return null;
    }
    int n = t.length;
    if (n < 20
        || n == 21
        || n > 30
        || t[4] != '-'
        || t[7] != '-'
        || t[10] != 'T'
        || t[13] != ':'
        || t[16] != ':'
        || t[n - 1] != 'Z') {
      return null;
    }
    int year = digits(t, 0, 4);
    int month = digits(t, 5, 7);
    int day = digits(t, 8, 10);
    int hour = digits(t, 11, 13);
    int minute = digits(t, 14, 16);
    int second = digits(t, 17, 19);
    int nanos = 0;
    if (n > 20) {
      if (t[19] != '.') {
        return null;
      }
      int fraction = digits(t, 20, n - 1);
      if (fraction < 0) {
        return null;
      }
      nanos = fraction;
      for (int i = n - 1 - 20; i < 9; i++) {
        nanos *= 10;
      }
    }
    if (year < 0
        || month < 1
        || month > 12
        || day < 1
        || day > 28 && day > java.time.YearMonth.of(year, month).lengthOfMonth()
        || hour < 0
        || hour > 23
        || minute < 0
        || minute > 59
        || second < 0
        || second > 59) {
      return null;
    }
    long epochDay = java.time.LocalDate.of(year, month, day).toEpochDay();
    return Instant.ofEpochSecond(epochDay * 86_400 + hour * 3_600 + minute * 60 + second, nanos);
  }

  /** The decimal value of {@code t[from, to)}, all ASCII digits, or -1. */
  private static int digits(byte[] t, int from, int to) {
    int v = 0;
    for (int i = from; i < to; i++) {
      int c = t[i];
      if (c < '0' || c > '9') {
        return -1;
      }
      v = v * 10 + (c - '0');
    }
    return v;
  }

  /** Parses a UUID in its canonical 8-4-4-4-12 hexadecimal form (any case). */
  public static UUID parseUuid(String text) {
    // ISO-8859-1 writes '?' for every character beyond it, which no UUID has
    UUID id =
        text.length() == 36 ? canonicalUuid(text.getBytes(StandardCharsets.ISO_8859_1)) : null;
    if (id == null) {
      throw new IllegalArgumentException(quote(text) + " is not a UUID");
    }
    return id;
  }

  /**
   * The UUID whose canonical 8-4-4-4-12 hexadecimal form (any case, ASCII) {@code bytes} are, or
   * null if they are anything else (null included): then {@link #utf8} and {@link
   * #parseUuid(String)} say what is wrong. Read straight from the bytes because a message id is on
   * every consumed record: decoding it to a String and parsing that (validated, then {@code
   * UUID.fromString}) was in about a fifth of the batch consumer's worker samples in a profile of
   * the batch race (2026-12-04).
   */
  public static UUID canonicalUuid(byte[] bytes) {
    if (bytes == null || bytes.length != 36) {
      return null;
    }
    long msb = 0;
    long lsb = 0;
    for (int i = 0; i < 36; i++) {
      int c = bytes[i] & 0xff;
      if (i == 8 || i == 13 || i == 18 || i == 23) {
        if (c != '-') {
          return null;
        }
        continue;
      }
      int digit = c < HEX.length ? HEX[c] : -1;
      if (digit < 0) {
        return null;
      }
      if (i < 18) {
        msb = msb << 4 | digit;
      } else {
        lsb = lsb << 4 | digit;
      }
    }
    return new UUID(msb, lsb);
  }

  /**
   * An untrusted header value described for an error message <b>without its content</b>: its length
   * only. Error messages reach logs, and header values (like payloads) never may; the dead letter
   * keeps the raw headers for whoever is allowed to read them.
   */
  public static String quote(String text) {
    return "a value of " + text.length() + (text.length() == 1 ? " character" : " characters");
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
