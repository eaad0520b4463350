package dev.postbox.jdbc.cdc.internal;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.temporal.ChronoField;
import java.time.temporal.ChronoUnit;
import java.util.UUID;
import org.postgresql.util.PGbytea;

/**
 * The column values of one pgoutput tuple as the server sent them, read on demand: each value is
 * NULL ({@code 'n'}), text ({@code 't'}, the type's output function) or binary ({@code 'b'}, the
 * type's send function; sent when the stream was started with {@code binary 'true'}, PostgreSQL
 * 14+). Binary values spare the walsender the text output functions and the relay the parsing: a
 * timestamptz is 8 bytes of microseconds instead of a formatted date, a bytea its bytes instead of
 * hex. pgjdbc decodes neither form for a replication stream, so the formats are read here as
 * PostgreSQL's sources ({@code int8send}, {@code uuid_send}, {@code timestamptz_send}, {@code
 * jsonb_send}, {@code byteasend}, {@code textsend}) lay them out; text values of bytea go through
 * pgjdbc's {@code PGbytea}.
 *
 * <p>The accessors throw {@link IllegalArgumentException} (or a parse exception) for a value that
 * is not of the asked type; the caller decides whether that makes the row unreadable.
 */
final class TupleData {

  /** Microseconds since this instant: PostgreSQL's timestamp epoch. */
  private static final Instant POSTGRES_EPOCH = Instant.parse("2000-01-01T00:00:00Z");

  /**
   * PostgreSQL's ISO text form of timestamptz ({@code 2026-12-01 11:47:58.123456+00}; the offset
   * may carry minutes and seconds), whatever the walsender's TimeZone is.
   */
  static final DateTimeFormatter TIMESTAMPTZ =
      new DateTimeFormatterBuilder()
          .append(DateTimeFormatter.ISO_LOCAL_DATE)
          .appendLiteral(' ')
          .appendValue(ChronoField.HOUR_OF_DAY, 2)
          .appendLiteral(':')
          .appendValue(ChronoField.MINUTE_OF_HOUR, 2)
          .appendLiteral(':')
          .appendValue(ChronoField.SECOND_OF_MINUTE, 2)
          .optionalStart()
          .appendFraction(ChronoField.NANO_OF_SECOND, 1, 9, true)
          .optionalEnd()
          .appendOffset("+HH:mm:ss", "+00")
          .toFormatter();

  private final byte[] buf;
  private final byte[] kind;
  private final int[] offset;
  private final int[] length;

  private TupleData(byte[] buf, byte[] kind, int[] offset, int[] length) {
    this.buf = buf;
    this.kind = kind;
    this.offset = offset;
    this.length = length;
  }

  /**
   * Reads a TupleData block (column count, then each value) from {@code b}, which must be backed by
   * an array; the values stay views into that array.
   */
  static TupleData read(ByteBuffer b) {
    int n = b.getShort();
    byte[] kind = new byte[n];
    int[] offset = new int[n];
    int[] length = new int[n];
    for (int i = 0; i < n; i++) {
      byte k = b.get();
      switch (k) {
        case 'n' -> {}
        case 't', 'b' -> {
          int len = b.getInt();
          if (len < 0 || len > b.remaining()) {
            throw new IllegalStateException(
                "pgoutput: value length " + len + " (column " + i + ")");
          }
          offset[i] = b.arrayOffset() + b.position();
          length[i] = len;
          b.position(b.position() + len);
        }
        case 'u' ->
            throw new IllegalStateException(
                "pgoutput: unchanged TOAST value in an insert (column " + i + ")");
        default -> throw new IllegalStateException("pgoutput: tuple value kind " + (char) k);
      }
      kind[i] = k;
    }
    return new TupleData(b.array(), kind, offset, length);
  }

  /**
   * A tuple of text values (null for NULL): an emitted envelope's columns ({@link
   * EmittedEnvelope}).
   */
  static TupleData ofText(String[] values) {
    int n = values.length;
    byte[][] parts = new byte[n][];
    int total = 0;
    for (int i = 0; i < n; i++) {
      if (values[i] != null) {
        parts[i] = values[i].getBytes(StandardCharsets.UTF_8);
        total += parts[i].length;
      }
    }
    byte[] buf = new byte[total];
    byte[] kind = new byte[n];
    int[] offset = new int[n];
    int[] length = new int[n];
    int at = 0;
    for (int i = 0; i < n; i++) {
      kind[i] = parts[i] == null ? (byte) 'n' : (byte) 't';
      if (parts[i] != null) {
        System.arraycopy(parts[i], 0, buf, at, parts[i].length);
        offset[i] = at;
        length[i] = parts[i].length;
        at += parts[i].length;
      }
    }
    return new TupleData(buf, kind, offset, length);
  }

  boolean isNull(int i) {
    return kind[i] == 'n';
  }

  private boolean binary(int i) {
    return kind[i] == 'b';
  }

  private ByteBuffer bytes(int i) {
    return ByteBuffer.wrap(buf, offset[i], length[i]);
  }

  /** A text column (text and binary forms are the same UTF-8 bytes); null for NULL. */
  String text(int i) {
    return isNull(i) ? null : new String(buf, offset[i], length[i], StandardCharsets.UTF_8);
  }

  /** A smallint, integer or bigint column. */
  long integer(int i) {
    requireValue(i, "integer");
    if (!binary(i)) {
      return Long.parseLong(text(i));
    }
    ByteBuffer b = bytes(i);
    return switch (length[i]) {
      case 2 -> b.getShort();
      case 4 -> b.getInt();
      case 8 -> b.getLong();
      default ->
          throw new IllegalArgumentException(
              "an integer of " + length[i] + " bytes (column " + i + ")");
    };
  }

  /** A uuid column. */
  UUID uuid(int i) {
    requireValue(i, "uuid");
    if (!binary(i)) {
      return UUID.fromString(text(i));
    }
    requireLength(i, 16, "uuid");
    ByteBuffer b = bytes(i);
    return new UUID(b.getLong(), b.getLong());
  }

  /** A timestamptz column; infinity is refused. */
  Instant timestamp(int i) {
    requireValue(i, "timestamptz");
    if (!binary(i)) {
      return timestamp(text(i));
    }
    requireLength(i, 8, "timestamptz");
    long micros = bytes(i).getLong();
    if (micros == Long.MAX_VALUE || micros == Long.MIN_VALUE) {
      throw new IllegalArgumentException("an infinite timestamp (column " + i + ")");
    }
    return POSTGRES_EPOCH.plus(micros, ChronoUnit.MICROS);
  }

  /** A bytea column. */
  byte[] bytea(int i) {
    requireValue(i, "bytea");
    if (binary(i)) {
      byte[] out = new byte[length[i]];
      System.arraycopy(buf, offset[i], out, 0, length[i]);
      return out;
    }
    byte[] hex = new byte[length[i]];
    System.arraycopy(buf, offset[i], hex, 0, length[i]);
    try {
      return PGbytea.toBytes(hex);
    } catch (SQLException e) {
      throw new IllegalArgumentException("not bytea text (column " + i + ")", e);
    }
  }

  /**
   * A jsonb column's JSON text (binary jsonb is a version byte, 1, then the text); null for NULL.
   */
  String json(int i) {
    if (isNull(i) || !binary(i)) {
      return text(i);
    }
    if (length[i] < 1 || buf[offset[i]] != 1) {
      throw new IllegalArgumentException("unknown binary jsonb version (column " + i + ")");
    }
    return new String(buf, offset[i] + 1, length[i] - 1, StandardCharsets.UTF_8);
  }

  static Instant timestamp(String text) {
    return OffsetDateTime.parse(text, TIMESTAMPTZ).toInstant();
  }

  private void requireValue(int i, String type) {
    if (isNull(i)) {
      throw new IllegalArgumentException(type + " column " + i + " is NULL");
    }
  }

  private void requireLength(int i, int expected, String type) {
    if (length[i] != expected) {
      throw new IllegalArgumentException(
          "a binary " + type + " of " + length[i] + " bytes (column " + i + ")");
    }
  }
}
