package dev.postbox.verify;

import java.nio.file.Path;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * What the campaign's journals say PostgreSQL acknowledged, for the {@link HistoryChecker} on a
 * PostgreSQL pair: the producers' commits ({@link CommitJournal}) and the consumers' applied
 * messages ({@link AppliedJournal}), and how a commit PostgreSQL lost is judged (a violation on a
 * synchronous standby, measured on an asynchronous one).
 */
final class JournaledCommits {

  private final Path dir;
  private final boolean asynchronousStandby;

  JournaledCommits(Path dir, boolean asynchronousStandby) {
    this.dir = dir;
    this.asynchronousStandby = asynchronousStandby;
  }

  boolean asynchronousStandby() {
    return asynchronousStandby;
  }

  /** How a commit PostgreSQL lost counts. */
  Findings.PostgresLoss judged() {
    return asynchronousStandby ? Findings.PostgresLoss.MEASURED : Findings.PostgresLoss.VIOLATION;
  }

  /** The producers' acknowledged commits (message id, phase), read now. */
  Map<UUID, Integer> committed() {
    return CommitJournal.read(dir);
  }

  /** The messages the consumers applied and committed (message id, phase), read now. */
  Map<UUID, Integer> applied() {
    return CommitJournal.read(dir, AppliedJournal.SUFFIX);
  }

  /**
   * The messages a consumer applied (journaled) more often than the database holds effects of them
   * ({@code effects}: count per message id), with how many of their effects PostgreSQL lost: an
   * acknowledged effect gone with the old primary, whether the message was applied again since or
   * not.
   */
  Map<UUID, Integer> effectsLost(Map<UUID, Integer> effects) {
    Map<UUID, Integer> lost = new java.util.HashMap<>();
    CommitJournal.counts(dir, AppliedJournal.SUFFIX)
        .forEach((id, applied) -> {
          int held = effects.getOrDefault(id, 0);
          if (applied > held) {
            lost.put(id, applied - held);
          }
        });
    return lost;
  }

  /**
   * Which of {@code ids} (records with neither an effect nor a dead letter in the database) are
   * finished as far as Postbox goes: a consumer journaled it as applied (PostgreSQL lost the
   * effect), or a producer journaled its commit and the database no longer holds its business row
   * (PostgreSQL lost the commit: nothing to apply). The checker counts both as lost by PostgreSQL.
   */
  Set<UUID> finishedAmong(Set<UUID> ids, DataSource ds) throws SQLException {
    Set<UUID> finished = new HashSet<>();
    if (ids.isEmpty()) {
      return finished;
    }
    Map<UUID, Integer> applied = applied();
    Map<UUID, Integer> committed = committed();
    Set<UUID> ask = new HashSet<>();
    for (UUID id : ids) {
      if (applied.containsKey(id)) {
        finished.add(id);
      } else if (committed.containsKey(id)) {
        ask.add(id);
      }
    }
    if (ask.isEmpty()) {
      return finished;
    }
    Set<UUID> inDatabase = new HashSet<>();
    try (Connection c = ds.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT message_id FROM verify_business WHERE message_id = ANY (?)")) {
      Array a = c.createArrayOf("uuid", ask.toArray());
      ps.setArray(1, a);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          inDatabase.add(rs.getObject(1, UUID.class));
        }
      }
    }
    ask.removeAll(inDatabase);
    finished.addAll(ask);
    return finished;
  }
}
