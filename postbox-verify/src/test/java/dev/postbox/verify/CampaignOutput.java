package dev.postbox.verify;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * What a campaign prints in a test: kept for the assertions' messages and written through to
 * standard output as it comes, so that a test stopped by its timeout (or its fork killed) still
 * shows in its output file how far the campaign got.
 */
final class CampaignOutput {

  private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
  private final PrintStream out =
      new PrintStream(
          new OutputStream() {
            @Override
            public void write(int b) {
              kept.write(b);
              System.out.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) {
              kept.write(b, off, len);
              System.out.write(b, off, len);
            }

            @Override
            public void flush() {
              System.out.flush();
            }
          },
          true,
          StandardCharsets.UTF_8);

  /** The stream to hand to the campaign. */
  PrintStream out() {
    return out;
  }

  /** Everything printed so far. */
  String text() {
    out.flush();
    return kept.toString(StandardCharsets.UTF_8);
  }
}
