package dev.postbox.core.codec;

import static org.assertj.core.api.Assertions.assertThat;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

/** The escaping of text a store cannot hold: unchanged when it can, reversible always. */
class StoredTextTest {

  @Test
  void plainTextIsStoredUnchanged() {
    assertThat(StoredText.encode("acme")).isEqualTo("acme");
    assertThat(StoredText.encode("a\\b ü 😀")).isEqualTo("a\\b ü 😀");
    assertThat(StoredText.encode(null)).isNull();
    assertThat(StoredText.decode("a\\0b")).isEqualTo("a\\0b"); // no marker: as it is
  }

  @Test
  void nulAndLoneSurrogatesAreEscapedBehindTheMarker() {
    assertThat(StoredText.encode("ac\u0000me")).isEqualTo("\\~ac\\0me");
    assertThat(StoredText.encode("a\\b\u0000")).isEqualTo("\\~a\\\\b\\0");
    assertThat(StoredText.encode("x\uD800y")).isEqualTo("\\~x\\uD800y");
    assertThat(StoredText.encode("\uDC00")).isEqualTo("\\~\\uDC00");
    assertThat(StoredText.encode("\\~not escaped")).isEqualTo("\\~\\\\~not escaped");
  }

  @Test
  void asciiEscapesEverythingOutsidePrintableAscii() {
    assertThat(StoredText.ascii("tab\tü\u0001")).isEqualTo("\\~tab\t\\u00FC\\u0001");
    assertThat(StoredText.decode(StoredText.ascii("tab\tü\u0001😀"))).isEqualTo("tab\tü\u0001😀");
  }

  @Test
  void readsAMalformedEscapeAsItIs() {
    assertThat(StoredText.decode("\\~a\\u12")).isEqualTo("a\\u12");
    assertThat(StoredText.decode("\\~a\\uXYZW")).isEqualTo("a\\uXYZW");
    assertThat(StoredText.decode("\\~a\\")).isEqualTo("a\\");
  }

  @Property(tries = 2000)
  void encodeThenDecodeGivesTheTextBack(@ForAll String text) {
    String stored = StoredText.encode(text);
    assertThat(stored).doesNotContain("\u0000");
    assertThat(StoredText.decode(stored)).isEqualTo(text);
    assertThat(StoredText.decode(StoredText.ascii(text))).isEqualTo(text);
    assertThat(StoredText.ascii(text).chars()).allMatch(c -> c < 0x7F);
  }
}
