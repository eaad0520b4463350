package dev.postbox.verify;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

/**
 * The producers' record, outside the database, of the business transactions whose commit PostgreSQL
 * acknowledged: a line {@code phase,message id} per message, appended once the commit returned. A
 * commit PostgreSQL later loses (an asynchronous standby promoted before it received it) is in a
 * journal and not in the database, so the checker can tell the transactions PostgreSQL lost from
 * the events Postbox lost. A process killed between its commit and the append leaves that commit
 * out: the journals hold a subset of the acknowledged commits, never a commit that was not
 * acknowledged. The file is the OS's page cache's until written back: the harness kills processes,
 * not the machine. Thread-safe.
 */
final class CommitJournal implements AutoCloseable {

  /** The journals' file name suffix in their folder. */
  static final String SUFFIX = ".commits";

  private final java.io.Writer out;

  private CommitJournal(java.io.Writer out) {
    this.out = out;
  }

  /** Appends to {@code file} (created with its folder if missing). */
  static CommitJournal open(Path file) {
    try {
      Files.createDirectories(file.toAbsolutePath().getParent());
      return new CommitJournal(
          Files.newBufferedWriter(
              file, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Records the messages {@code ids} of a transaction of {@code phase} whose commit returned. */
  synchronized void acknowledged(int phase, List<UUID> ids) {
    try {
      for (UUID id : ids) {
        out.write(phase + "," + id + "\n");
      }
      out.flush(); // into the OS before the next transaction: a kill -9 loses no line
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every message id of every producers' journal in {@code dir}, with its phase. */
  static Map<UUID, Integer> read(Path dir) {
    return read(dir, SUFFIX);
  }

  /**
   * Every message id of every journal in {@code dir} whose name ends with {@code suffix} ({@link
   * #SUFFIX}: the producers', {@link AppliedJournal#SUFFIX}: the consumers'), with its phase; empty
   * if there is none.
   */
  static Map<UUID, Integer> read(Path dir, String suffix) {
    Map<UUID, Integer> ids = new HashMap<>();
    forEach(dir, suffix, ids::put);
    return ids;
  }

  /**
   * How many times each message id is in the journals in {@code dir} whose name ends with {@code
   * suffix} (a consumer journals a message once per transaction that applied it).
   */
  static Map<UUID, Integer> counts(Path dir, String suffix) {
    Map<UUID, Integer> counts = new HashMap<>();
    forEach(dir, suffix, (id, phase) -> counts.merge(id, 1, Integer::sum));
    return counts;
  }

  /**
   * Each whole line (message id, phase) of the journals in {@code dir} ending with {@code suffix}.
   */
  private static void forEach(
      Path dir, String suffix, java.util.function.BiConsumer<UUID, Integer> line) {
    if (!Files.isDirectory(dir)) {
      return;
    }
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(suffix)).toList()) {
        for (String l : Files.readAllLines(f, StandardCharsets.UTF_8)) {
          int comma = l.indexOf(',');
          if (comma < 0 || l.length() != comma + 37) {
            continue; // the last line of a process killed while writing it
          }
          line.accept(
              UUID.fromString(l.substring(comma + 1)), Integer.parseInt(l.substring(0, comma)));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * The journaled ids ({@code acknowledged}, with their phase) that are not among the database's
   * business rows ({@code inDatabase}): commits PostgreSQL acknowledged and lost.
   */
  static Map<UUID, Integer> missing(
      Map<UUID, Integer> acknowledged, Map<UUID, Integer> inDatabase) {
    Map<UUID, Integer> lost = new HashMap<>();
    acknowledged.forEach((id, phase) -> {
      if (!inDatabase.containsKey(id)) {
        lost.put(id, phase);
      }
    });
    return lost;
  }

  @Override
  public synchronized void close() {
    try {
      out.close();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
