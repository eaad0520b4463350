package dev.postbox.testkit.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/** Reading log files that another process is appending to. */
public final class LogFiles {

  private LogFiles() {}

  /** The size of {@code file}, 0 if it does not exist. */
  public static long size(Path file) {
    try {
      return Files.size(file);
    } catch (NoSuchFileException e) {
      return 0;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The last {@code max} lines of {@code file} after byte offset {@code from}, joined. */
  public static String tail(Path file, long from, int max) {
    Cursor cursor = new Cursor(file, from);
    Deque<String> lines = new ArrayDeque<>();
    for (String line : cursor.readLines()) {
      lines.addLast(line);
      if (lines.size() > max) {
        lines.removeFirst();
      }
    }
    cursor.partialLine().ifPresent(lines::addLast);
    return String.join(System.lineSeparator(), lines);
  }

  /**
   * Reads the complete lines appended to a file since the last call. Not thread-safe; use one per
   * reader.
   */
  public static final class Cursor {
    private final Path file;
    private long position;
    private final java.io.ByteArrayOutputStream partial = new java.io.ByteArrayOutputStream();

    public Cursor(Path file, long position) {
      this.file = file;
      this.position = position;
    }

    /** The complete lines appended since the last call (without line terminators). */
    public List<String> readLines() {
      List<String> lines = new ArrayList<>();
      if (!Files.exists(file)) {
        return lines;
      }
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
        ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
        while (true) {
          buf.clear();
          int n = ch.read(buf, position);
          if (n <= 0) {
            break;
          }
          position += n;
          byte[] a = buf.array();
          for (int i = 0; i < n; i++) {
            if (a[i] == '\n') {
              String line = partial.toString(StandardCharsets.UTF_8);
              partial.reset();
              lines.add(line.endsWith("\r") ? line.substring(0, line.length() - 1) : line);
            } else {
              partial.write(a[i]);
            }
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + file, e);
      }
      return lines;
    }

    /** The incomplete last line read so far, if any. */
    public java.util.Optional<String> partialLine() {
      return partial.size() == 0
          ? java.util.Optional.empty()
          : java.util.Optional.of(partial.toString(StandardCharsets.UTF_8));
    }
  }
}
