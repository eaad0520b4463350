package dev.postbox.core.codec;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.chrono.IsoChronology;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.ResolverStyle;
import java.time.temporal.ChronoField;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The fast path of {@link HeaderText#parseTime} agrees with the RFC 3339 formatter. */
class HeaderTextTimeTest {

  // the formatter parseTime used alone before its fast path, as the reference
  private static final DateTimeFormatter REFERENCE =
      new DateTimeFormatterBuilder()
          .parseCaseInsensitive()
          .append(DateTimeFormatter.ISO_LOCAL_DATE)
          .appendLiteral('T')
          .appendValue(ChronoField.HOUR_OF_DAY, 2)
          .appendLiteral(':')
          .appendValue(ChronoField.MINUTE_OF_HOUR, 2)
          .appendLiteral(':')
          .appendValue(ChronoField.SECOND_OF_MINUTE, 2)
          .optionalStart()
          .appendFraction(ChronoField.NANO_OF_SECOND, 0, 9, true)
          .optionalEnd()
          .appendOffset("+HH:MM", "Z")
          .toFormatter()
          .withResolverStyle(ResolverStyle.STRICT)
          .withChronology(IsoChronology.INSTANCE);

  private static String reference(String text) {
    try {
      Instant i = OffsetDateTime.parse(text, REFERENCE).toInstant();
      // and only what formatTime can write back: years 0000 to 9999 in UTC
      return i.isBefore(Instant.parse("0000-01-01T00:00:00Z"))
              || i.isAfter(Instant.parse("9999-12-31T23:59:59.999999999Z"))
          ? "rejected"
          : i.toString();
    } catch (RuntimeException e) {
      return "rejected";
    }
  }

  private static String parsed(String text) {
    try {
      return HeaderText.parseTime(text).toString();
    } catch (IllegalArgumentException e) {
      return "rejected";
    }
  }

  @Test
  void whatFormatTimeWritesIsReadByTheFastPathAsTheFormatterReadsIt() {
    Random random = new Random(42);
    long min = Instant.parse("0000-01-01T00:00:00Z").getEpochSecond();
    long max = Instant.parse("9999-12-31T23:59:59Z").getEpochSecond();
    for (int i = 0; i < 20_000; i++) {
      long second = min + (long) (random.nextDouble() * (max - min));
      int nanos =
          switch (i % 4) {
            case 0 -> 0;
            case 1 -> random.nextInt(1_000) * 1_000_000;
            case 2 -> random.nextInt(1_000_000) * 1_000;
            default -> random.nextInt(1_000_000_000);
          };
      Instant instant = Instant.ofEpochSecond(second, nanos);
      String text = HeaderText.formatTime(instant);
      assertThat(HeaderText.parseUtcTime(text)).as(text).isEqualTo(instant);
      assertThat(parsed(text)).as(text).isEqualTo(reference(text));
    }
  }

  @Test
  void edgeCasesAgreeWithTheFormatter() {
    List<String> cases =
        List.of(
            "2026-12-01T04:00:08Z",
            "2026-12-01T04:00:08.1Z",
            "2026-12-01T04:00:08.123456789Z",
            "2026-12-01T04:00:08.1234567891Z",
            "2026-12-01T04:00:08.Z",
            "2026-12-01t04:00:08z",
            "2026-12-01T04:00:08+01:00",
            "2026-12-01T04:00:08.5-05:30",
            "2024-02-29T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-12-00T00:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T23:60:00Z",
            "2026-12-01T23:59:60Z",
            "0000-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999999Z",
            "+2026-12-01T04:00:08Z",
            "+10000-01-01T00:00:00Z",
            "9999-12-31T23:59:59-01:00",
            "0000-01-01T00:00:00+01:00",
            "2026-12-01T04:00:08",
            "2026-12-01 04:00:08Z",
            "2026-1a-01T04:00:08Z",
            "2026-12-01T04:00:08.12a4Z",
            "2026-12-01T04:00:0８Z",
            "");
    for (String text : cases) {
      assertThat(parsed(text)).as(text).isEqualTo(reference(text));
    }
  }
}
