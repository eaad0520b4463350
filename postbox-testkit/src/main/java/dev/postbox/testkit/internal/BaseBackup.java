package dev.postbox.testkit.internal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Set;

/**
 * A base backup through PostgreSQL's low-level API (the zonky bundle has no {@code pg_basebackup}):
 * {@code pg_backup_start}, a file copy of the running server's data directory, {@code
 * pg_backup_stop}, whose label file becomes the copy's {@code backup_label}. Files the server
 * rewrites during the copy are made consistent by the WAL the standby replays from the backup's
 * start. Written here because nothing in the bundle or on Maven Central does this over JDBC.
 */
final class BaseBackup {

  /** Files never copied: the running server's, and zonky's lock. */
  private static final Set<String> SKIPPED_FILES =
      Set.of("postmaster.pid", "postmaster.opts", EmbeddedPostgresServer.ZONKY_LOCK_FILE);

  /** Directories copied empty (PostgreSQL's documentation on base backups says which). */
  private static final Set<String> EMPTIED_DIRS =
      Set.of(
          "pg_wal",
          "pg_replslot",
          "pg_stat_tmp",
          "pg_dynshmem",
          "pg_notify",
          "pg_serial",
          "pg_snapshots",
          "pg_subtrans");

  private BaseBackup() {}

  /**
   * Copies the data directory of the server at {@code jdbcUrl}, {@code source}, to {@code target}.
   */
  static void take(String jdbcUrl, Path source, Path target) {
    try (Connection c = DriverManager.getConnection(jdbcUrl)) {
      try (PreparedStatement ps = c.prepareStatement("SELECT pg_backup_start(?, true)")) {
        ps.setString(1, "postbox-standby");
        ps.execute();
      }
      copy(source, target);
      try (PreparedStatement ps =
              c.prepareStatement("SELECT labelfile FROM pg_backup_stop(false)");
          ResultSet rs = ps.executeQuery()) {
        rs.next();
        Files.writeString(target.resolve("backup_label"), rs.getString(1));
      }
    } catch (SQLException e) {
      throw new IllegalStateException("base backup failed: " + e.getMessage(), e);
    } catch (IOException e) {
      throw new UncheckedIOException("base backup failed", e);
    }
    for (String d : Set.of("pg_wal/archive_status", "pg_wal/summaries")) {
      try {
        Files.createDirectories(target.resolve(d));
      } catch (IOException e) {
        throw new UncheckedIOException("cannot create " + d, e);
      }
    }
  }

  /** Appends settings to the copy's {@code postgresql.auto.conf} and marks it a standby. */
  static void configureStandby(Path target, String settings) throws IOException {
    Files.writeString(
        target.resolve("postgresql.auto.conf"),
        settings,
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
    Files.createFile(target.resolve("standby.signal"));
  }

  private static void copy(Path source, Path target) throws IOException {
    Files.createDirectories(target);
    Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rwx------"));
    Files.walkFileTree(
        source,
        new SimpleFileVisitor<>() {
          @Override
          public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs)
              throws IOException {
            Path rel = source.relativize(dir);
            Files.createDirectories(target.resolve(rel.toString()));
            return !dir.equals(source) && EMPTIED_DIRS.contains(rel.toString())
                ? FileVisitResult.SKIP_SUBTREE
                : FileVisitResult.CONTINUE;
          }

          @Override
          public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
              throws IOException {
            Path rel = source.relativize(file);
            if (rel.getNameCount() == 1 && SKIPPED_FILES.contains(rel.toString())) {
              return FileVisitResult.CONTINUE;
            }
            try {
              Files.copy(file, target.resolve(rel.toString()), StandardCopyOption.REPLACE_EXISTING);
            } catch (NoSuchFileException e) {
              // the server removed it during the copy: the WAL replay does without it
            }
            return FileVisitResult.CONTINUE;
          }

          @Override
          public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
            if (e instanceof NoSuchFileException) {
              return FileVisitResult.CONTINUE;
            }
            throw e;
          }
        });
  }
}
