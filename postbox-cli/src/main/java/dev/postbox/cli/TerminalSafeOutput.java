package dev.postbox.cli;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * The operator commands' output with control characters made visible: what a producer wrote (a key,
 * a header, an error message quoting it) is printed, and a NUL, an ESC starting a terminal escape
 * sequence or a C1 control must not reach the terminal as such. Each C0 control other than tab and
 * line feed, and DEL, is written {@code \xNN}; each C1 control (U+0080 to U+009F, two bytes in
 * UTF-8) {@code \}{@code u00NN}. Everything else, including all other UTF-8 text and JSON (whose
 * encoder escapes controls itself), passes unchanged. Not thread-safe (one per stream, as {@link
 * PrintStream} serialises its writes).
 */
final class TerminalSafeOutput extends FilterOutputStream {

  private static final int C1_LEAD = 0xC2;

  private boolean heldLead;

  TerminalSafeOutput(OutputStream out) {
    super(out);
  }

  /** A UTF-8 print stream over {@code out} that writes through this filter. */
  static PrintStream printStream(OutputStream out) {
    return new PrintStream(new TerminalSafeOutput(out), true, StandardCharsets.UTF_8);
  }

  @Override
  public void write(int b) throws IOException {
    int v = b & 0xFF;
    if (heldLead) {
      heldLead = false;
      if (v >= 0x80 && v <= 0x9F) {
        escape("\\u00%02X", v);
        return;
      }
      out.write(C1_LEAD);
    }
    if (v == C1_LEAD) {
      heldLead = true;
    } else if ((v < 0x20 && v != '\t' && v != '\n') || v == 0x7F) {
      escape("\\x%02X", v);
    } else {
      out.write(v);
    }
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    for (int i = off; i < off + len; i++) {
      write(b[i]);
    }
  }

  @Override
  public void flush() throws IOException {
    out.flush(); // a held lead byte waits for its continuation, which follows in the same text
  }

  @Override
  public void close() throws IOException {
    if (heldLead) {
      heldLead = false;
      out.write(C1_LEAD);
    }
    super.close();
  }

  private void escape(String format, int v) throws IOException {
    out.write(String.format(format, v).getBytes(StandardCharsets.US_ASCII));
  }
}
