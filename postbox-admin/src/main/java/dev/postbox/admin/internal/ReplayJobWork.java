package dev.postbox.admin.internal;

import dev.postbox.admin.AdminException;
import dev.postbox.jdbc.ReplayRoute;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.function.LongFunction;
import javax.sql.DataSource;

/**
 * How a runner works the replay jobs (migration V20): it claims a RUNNING job whose lease is free
 * (never taken, or expired because its runner stopped) and works its letters one at a time, each in
 * a transaction that holds the job's row (shared, so pause, cancel and a take-over wait for the
 * letter in hand; the owner is checked, so a runner whose lease was taken over stops) and the
 * letter's row ({@code FOR UPDATE SKIP LOCKED}), and that writes the letter's outcome and the job's
 * counts once the letter's own replay transaction has committed. Lease times come from the injected
 * clock.
 */
public final class ReplayJobWork {

  /** What a runner works: a job it holds the lease of. */
  public record Claim(long jobId, String createdBy, ReplayRoute route) {}

  /** What working a job's next letter did. */
  public enum Step {
    /** One letter worked. */
    WORKED,
    /** No letter was left: the job is DONE now. */
    FINISHED,
    /** The job is not this runner's any more (paused, cancelled, or its lease taken over). */
    LOST,
    /** Letters are left, but another transaction holds each. */
    BUSY
  }

  /** A letter's outcome, as stored. */
  public enum Outcome {
    REPLAYED,
    SKIPPED,
    FAILED
  }

  private final DataSource dataSource;
  private final Clock clock;
  private final Duration lease;

  public ReplayJobWork(DataSource dataSource, Clock clock, Duration lease) {
    this.dataSource = dataSource;
    this.clock = clock;
    this.lease = lease;
  }

  /** Takes the lease of the oldest RUNNING job that is {@code owner}'s or free. */
  public Optional<Claim> claim(String owner) {
    String sql =
        "UPDATE postbox_replay_job SET owner = ?, lease_until = ?,"
            + " started_at = coalesce(started_at, ?) WHERE id = (SELECT id FROM postbox_replay_job"
            + " WHERE state = 'RUNNING' AND (owner = ? OR owner IS NULL OR lease_until < ?)"
            + " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, created_by, route";
    Timestamp now = Timestamp.from(clock.instant());
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, owner);
      ps.setTimestamp(2, Timestamp.from(clock.instant().plus(lease)));
      ps.setTimestamp(3, now);
      ps.setString(4, owner);
      ps.setTimestamp(5, now);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next()
            ? Optional.of(
                new Claim(
                    rs.getLong("id"),
                    rs.getString("created_by"),
                    ReplayRoute.valueOf(rs.getString("route"))))
            : Optional.empty();
      }
    } catch (SQLException e) {
      throw new AdminException("could not claim a replay job", e);
    }
  }

  /**
   * Works the next letter of job {@code jobId} if {@code owner} still holds it: {@code replay}
   * replays the dead letter (in its own transaction) and says how it went.
   */
  public Step workNext(long jobId, String owner, LongFunction<Outcome> replay) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        Step s = workNext(c, jobId, owner, replay);
        c.commit();
        return s;
      } catch (RuntimeException | SQLException e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw new AdminException("could not work replay job " + jobId, e);
    }
  }

  private Step workNext(Connection c, long jobId, String owner, LongFunction<Outcome> replay)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT 1 FROM postbox_replay_job WHERE id = ? AND state = 'RUNNING' AND owner = ?"
                + " FOR SHARE")) {
      ps.setLong(1, jobId);
      ps.setString(2, owner);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Step.LOST;
        }
      }
    }
    int seq;
    long letter;
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT seq, dead_letter_id FROM postbox_replay_job_letter WHERE job_id = ?"
                + " AND outcome IS NULL ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED")) {
      ps.setLong(1, jobId);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return finish(c, jobId);
        }
        seq = rs.getInt(1);
        letter = rs.getLong(2);
      }
    }
    Outcome o = replay.apply(letter);
    Timestamp now = Timestamp.from(clock.instant());
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_replay_job_letter SET outcome = ?, done_at = ?"
                + " WHERE job_id = ? AND seq = ?")) {
      ps.setString(1, o.name());
      ps.setTimestamp(2, now);
      ps.setLong(3, jobId);
      ps.setInt(4, seq);
      ps.executeUpdate();
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_replay_job SET replayed = replayed + ?, skipped = skipped + ?,"
                + " failed = failed + ?, progress_at = ?, lease_until = ? WHERE id = ?")) {
      ps.setInt(1, o == Outcome.REPLAYED ? 1 : 0);
      ps.setInt(2, o == Outcome.SKIPPED ? 1 : 0);
      ps.setInt(3, o == Outcome.FAILED ? 1 : 0);
      ps.setTimestamp(4, now);
      ps.setTimestamp(5, Timestamp.from(clock.instant().plus(lease)));
      ps.setLong(6, jobId);
      ps.executeUpdate();
    }
    return Step.WORKED;
  }

  /** DONE if no letter is left to work; BUSY if some are, held by another transaction. */
  private Step finish(Connection c, long jobId) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_replay_job SET state = 'DONE', finished_at = ?, owner = NULL,"
                + " lease_until = '-infinity' WHERE id = ? AND NOT EXISTS (SELECT 1 FROM"
                + " postbox_replay_job_letter WHERE job_id = ? AND outcome IS NULL)")) {
      ps.setTimestamp(1, Timestamp.from(clock.instant()));
      ps.setLong(2, jobId);
      ps.setLong(3, jobId);
      return ps.executeUpdate() == 1 ? Step.FINISHED : Step.BUSY;
    }
  }
}
