package dev.postbox.kafka;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Copies everything written to {@code System.err} (where slf4j-simple logs in these tests) from
 * construction until {@link #close()}, which puts the original stream back; it is still written to.
 */
final class CapturedStderr implements AutoCloseable {

  private final PrintStream original = System.err;
  private final ByteArrayOutputStream captured = new ByteArrayOutputStream();

  CapturedStderr() {
    System.setErr(new PrintStream(new Tee(original, captured), true, StandardCharsets.UTF_8));
  }

  /** What was written so far. */
  String text() {
    synchronized (captured) {
      return captured.toString(StandardCharsets.UTF_8);
    }
  }

  @Override
  public void close() {
    System.setErr(original);
  }

  /** Writes to both streams. */
  private static final class Tee extends OutputStream {
    private final OutputStream a;
    private final OutputStream b;

    Tee(OutputStream a, OutputStream b) {
      this.a = a;
      this.b = b;
    }

    @Override
    public void write(int x) throws IOException {
      write(new byte[] {(byte) x}, 0, 1);
    }

    @Override
    public void write(byte[] buf, int off, int len) throws IOException {
      a.write(buf, off, len);
      synchronized (b) {
        b.write(buf, off, len);
      }
    }
  }
}
