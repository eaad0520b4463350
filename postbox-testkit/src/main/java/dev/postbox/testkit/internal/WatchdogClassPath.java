package dev.postbox.testkit.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A directory that holds only {@link ParentWatchdog}'s class file, for the class path of child JVMs
 * whose class path does not contain this module (the Kafka broker). Created once per JVM, deleted
 * when it exits.
 */
public final class WatchdogClassPath {

  private static volatile Path dir;

  private WatchdogClassPath() {}

  /** The directory, created on first use. */
  public static Path directory() {
    Path d = dir;
    if (d != null) {
      return d;
    }
    synchronized (WatchdogClassPath.class) {
      if (dir == null) {
        dir = extract();
      }
      return dir;
    }
  }

  private static Path extract() {
    String resource = ParentWatchdog.class.getName().replace('.', '/') + ".class";
    try (InputStream in = ParentWatchdog.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("cannot read class file " + resource);
      }
      Path root = OwnedDirectories.create("watchdog-");
      Path file = root.resolve(resource);
      Files.createDirectories(file.getParent());
      Files.write(file, in.readAllBytes());
      return root;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot extract " + resource, e);
    }
  }
}
