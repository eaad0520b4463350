package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.postbox.testkit.PostgresServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The consumers' journal on a real PostgreSQL: a message named on a connection is journaled once
 * its transaction's commit returned, never when it rolled back or the commit failed (an aborted
 * transaction's COMMIT); a connection that is not journaling ignores it.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class AppliedJournalIT {

  @Test
  void journalsWhatACommitThatReturnedApplied() throws Exception {
    Path dir = Files.createTempDirectory("applied-journal-it");
    Path file = dir.resolve("c#1" + AppliedJournal.SUFFIX);
    try (PostgresServer pg = PostgresServer.builder().build()) {
      pg.start();
      try (HikariDataSource ds = pg.dataSource(pg.createSchema("journal"), 2);
          CommitJournal journal = CommitJournal.open(file)) {
        DataSource journaling = AppliedJournal.journaling(ds, journal);
        UUID committed = UUID.randomUUID();
        UUID rolledBack = UUID.randomUUID();
        UUID closedOpen = UUID.randomUUID();
        UUID failed = UUID.randomUUID();
        try (Connection c = journaling.getConnection()) {
          assertThat(c.unwrap(Connection.class)).isSameAs(c);
          c.setAutoCommit(false);
          exec(c, "CREATE TABLE t (id int PRIMARY KEY)");
          AppliedJournal.applied(c, 3, committed);
          c.commit();
          AppliedJournal.applied(c, 3, rolledBack);
          c.rollback();
        }
        try (Connection c = journaling.getConnection()) {
          c.setAutoCommit(false);
          AppliedJournal.applied(c, 3, closedOpen);
          c.rollback(); // what a pool does with an open transaction it gets back
        }
        try (Connection c = journaling.getConnection()) {
          c.setAutoCommit(false);
          AppliedJournal.applied(c, 3, failed);
          exec(c, "INSERT INTO t VALUES (2)");
          assertThatThrownBy(() -> exec(c, "INSERT INTO t VALUES (2)"))
              .isInstanceOf(SQLException.class);
          // PostgreSQL answers COMMIT of an aborted transaction with a rollback, which pgjdbc
          // reports as a success: the journal must not take the message as applied
          c.commit();
        }
        // a connection that does not journal: nothing, no failure
        try (Connection plain = ds.getConnection()) {
          AppliedJournal.applied(plain, 3, UUID.randomUUID());
        }
      }
      assertThat(CommitJournal.read(dir, AppliedJournal.SUFFIX))
          .containsOnlyKeys(committedId(file));
    }
  }

  private static UUID committedId(Path file) throws Exception {
    String line = Files.readAllLines(file).get(0);
    assertThat(line).startsWith("3,");
    return UUID.fromString(line.substring(2));
  }

  private static void exec(Connection c, String sql) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
