package dev.postbox.testkit.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** {@link ProcessBuilder.Redirect}s to files. */
final class ProcessBuilderRedirects {

  private ProcessBuilderRedirects() {}

  /** Appends to {@code file}, creating it and its directory if needed. */
  static ProcessBuilder.Redirect appendTo(Path file) {
    try {
      if (file.getParent() != null) {
        Files.createDirectories(file.getParent());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return ProcessBuilder.Redirect.appendTo(file.toFile());
  }
}
