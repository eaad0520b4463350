package dev.postbox.core.codec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.UUID;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;

/**
 * Properties of {@link HeaderText}: every input either converts or fails with {@link
 * IllegalArgumentException} (which the mappings turn into a {@code DecodingException}); nothing
 * else escapes, and what it writes it reads back.
 */
class HeaderTextProperties {

  @Property(tries = 1_000)
  void utf8AgreesWithAStrictDecoderAndNeverThrowsAnythingElse(@ForAll @Size(max = 64) byte[] b) {
    String reference;
    try {
      reference =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(b))
              .toString();
    } catch (CharacterCodingException e) {
      reference = null;
    }
    if (reference == null) {
      assertThatThrownBy(() -> HeaderText.utf8(b))
          .isExactlyInstanceOf(IllegalArgumentException.class);
    } else {
      assertThat(HeaderText.utf8(b)).isEqualTo(reference);
    }
  }

  @Property(tries = 1_000)
  void textRoundTripsThroughUtf8(@ForAll String text) {
    // lone surrogates have no UTF-8 form: getBytes writes '?', which then reads back as '?'
    String wellFormed = new String(text.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);
    assertThat(HeaderText.utf8(HeaderText.bytes(wellFormed))).isEqualTo(wellFormed);
  }

  @Property(tries = 1_000)
  void parseTimeOfAnyTextIsAnInstantOrIllegalArgument(@ForAll("timeLike") String text) {
    try {
      Instant i = HeaderText.parseTime(text);
      assertThat(i).isNotNull();
    } catch (IllegalArgumentException expected) {
      // classified
    }
  }

  @Property(tries = 1_000)
  void utcTimeOfBytesAgreesWithTheFormatter(@ForAll("timeLike") String text) {
    Instant fromBytes = HeaderText.utcTime(text.getBytes(StandardCharsets.UTF_8));
    if (fromBytes != null) {
      // the fast path accepts only what the formatter it replaced accepts, with the same instant
      assertThat(HeaderText.parseWithFormatter(text)).isEqualTo(fromBytes);
    }
  }

  @Property(tries = 1_000)
  void parseTimeAgreesWithTheFormatterOnEveryText(@ForAll("timeLike") String text) {
    Instant reference;
    try {
      reference = HeaderText.parseWithFormatter(text);
    } catch (IllegalArgumentException rejected) {
      reference = null;
    }
    if (reference == null) {
      assertThatThrownBy(() -> HeaderText.parseTime(text))
          .isExactlyInstanceOf(IllegalArgumentException.class);
    } else {
      assertThat(HeaderText.parseTime(text)).isEqualTo(reference);
    }
  }

  @Property(tries = 1_000)
  void theFastPathReadsEveryTimeThePublisherWrites(@ForAll("instants") Instant instant) {
    String written = HeaderText.formatTime(instant);
    assertThat(HeaderText.utcTime(written.getBytes(StandardCharsets.US_ASCII)))
        .as("fast path of %s", written)
        .isEqualTo(instant);
  }

  @Property(tries = 1_000)
  void formatTimeIsReadBack(@ForAll("instants") Instant instant) {
    assertThat(HeaderText.parseTime(HeaderText.formatTime(instant))).isEqualTo(instant);
  }

  @Property(tries = 1_000)
  void parseUuidAcceptsExactlyTheCanonicalForm(@ForAll("uuidLike") String text) {
    boolean canonical =
        text.matches("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    if (canonical) {
      assertThat(HeaderText.parseUuid(text)).isEqualTo(UUID.fromString(text));
    } else {
      assertThatThrownBy(() -> HeaderText.parseUuid(text))
          .isExactlyInstanceOf(IllegalArgumentException.class);
    }
  }

  @Property(tries = 1_000)
  void canonicalUuidOfBytesAgreesWithParseUuidOfTheirText(@ForAll("uuidLike") String text) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    UUID expected;
    try {
      expected = HeaderText.parseUuid(text);
    } catch (IllegalArgumentException notCanonical) {
      expected = null;
    }
    assertThat(HeaderText.canonicalUuid(bytes)).isEqualTo(expected);
  }

  @Property(tries = 1_000)
  void canonicalUuidOfAnyBytesIsAUuidOrNull(@ForAll @Size(min = 30, max = 40) byte[] bytes) {
    UUID id = HeaderText.canonicalUuid(bytes);
    if (id != null) {
      assertThat(id.toString()).isEqualToIgnoringCase(new String(bytes, StandardCharsets.UTF_8));
    }
  }

  @Property(tries = 1_000)
  void parsePositiveIntAgreesWithItsDefinition(@ForAll("intLike") String text) {
    Integer reference = null;
    if (text.matches("[1-9][0-9]{0,9}")) {
      long v = Long.parseLong(text);
      reference = v <= Integer.MAX_VALUE ? (int) v : null;
    }
    if (reference == null) {
      assertThatThrownBy(() -> HeaderText.parsePositiveInt(text))
          .isExactlyInstanceOf(IllegalArgumentException.class);
    } else {
      assertThat(HeaderText.parsePositiveInt(text)).isEqualTo(reference);
    }
  }

  @Property(tries = 500)
  void quoteIsBoundedWhateverTheInput(@ForAll String text) {
    assertThat(HeaderText.quote(text).length()).isLessThanOrEqualTo(69);
  }

  @Provide
  Arbitrary<String> timeLike() {
    Arbitrary<String> valid = instants().map(HeaderText::formatTime);
    Arbitrary<String> mutated =
        valid.flatMap(s ->
            Arbitraries.integers()
                .between(0, s.length() - 1)
                .flatMap(i ->
                    Arbitraries.chars()
                        .with("0123456789-:TZz.+ x\u0660\uff10")
                        .map(c -> s.substring(0, i) + c + s.substring(i + 1))));
    return Arbitraries.oneOf(valid, mutated, Arbitraries.strings().ofMaxLength(40));
  }

  @Provide
  Arbitrary<Instant> instants() {
    long min = Instant.parse("0000-01-01T00:00:00Z").getEpochSecond();
    long max = Instant.parse("9999-12-31T23:59:59Z").getEpochSecond();
    return Arbitraries.longs()
        .between(min, max)
        .flatMap(s ->
            Arbitraries.integers().between(0, 999_999_999).map(n -> Instant.ofEpochSecond(s, n)));
  }

  @Provide
  Arbitrary<String> uuidLike() {
    Arbitrary<String> valid = Arbitraries.create(UUID::randomUUID).map(UUID::toString);
    Arbitrary<String> mutated =
        valid.flatMap(s ->
            Arbitraries.integers()
                .between(0, 35)
                .flatMap(i ->
                    Arbitraries.chars()
                        .with("0123456789abcdefABCDEFg-+ \u0661")
                        .map(c -> s.substring(0, i) + c + s.substring(i + 1))));
    return Arbitraries.oneOf(valid, mutated, Arbitraries.strings().ofMaxLength(40));
  }

  @Provide
  Arbitrary<String> intLike() {
    return Arbitraries.oneOf(
        Arbitraries.strings().withChars("0123456789").ofMinLength(0).ofMaxLength(12),
        Arbitraries.strings().withChars("0123456789+- \u0661").ofMaxLength(12),
        Arbitraries.integers().map(i -> Integer.toString(i)));
  }
}
