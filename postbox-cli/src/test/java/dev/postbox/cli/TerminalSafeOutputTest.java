package dev.postbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Control characters a producer wrote are printed visibly, never sent to the terminal. */
class TerminalSafeOutputTest {

  private static String printed(String text) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (PrintStream out = TerminalSafeOutput.printStream(bytes)) {
      out.print(text);
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }

  @Test
  void controlsAreEscapedAndTextPassesUnchanged() {
    assertThat(printed("ac\u0000me")).isEqualTo("ac\\x00me");
    assertThat(printed("\u001b[2Jcleared")).isEqualTo("\\x1B[2Jcleared");
    assertThat(printed("csi\u009b31m and del\u007f")).isEqualTo("csi\\u009B31m and del\\x7F");
    assertThat(printed("car\rriage")).isEqualTo("car\\x0Driage");
    assertThat(printed("tab\tand\nlines")).isEqualTo("tab\tand\nlines");
    assertThat(printed("üñí ¢ © ÿ 😀 \\~k\\0")).isEqualTo("üñí ¢ © ÿ 😀 \\~k\\0");
    assertThat(printed("ends in ¢")).isEqualTo("ends in ¢");
  }
}
