package dev.postbox.admin.internal;

import dev.postbox.admin.AdminException;
import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.DeadLetterSummary;
import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import dev.postbox.admin.ReplayJob;
import dev.postbox.admin.ReplayPreview;
import dev.postbox.admin.ReplaySelection;
import dev.postbox.core.spi.DeadLetterStore.Status;
import dev.postbox.jdbc.ReplayRoute;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The bulk replay jobs in {@code postbox_replay_job} (migration V20): the preview of a selection, a
 * job's creation (its letters fixed, oldest first, and its audit row, in one transaction), reads,
 * and the operator's pause, resume and cancel. Times come from the injected clock.
 */
public final class ReplayJobQueries {

  /** How many letters a preview shows. */
  public static final int SAMPLE = 5;

  static final String JOB_COLUMNS =
      "id, created_at, created_by, reason, selection, route, state, total, replayed, skipped,"
          + " failed, started_at, progress_at, finished_at, changed_by, owner, lease_until";

  private final DataSource dataSource;
  private final Clock clock;
  private final int confirmAbove;
  private final int maxLetters;

  public ReplayJobQueries(DataSource dataSource, Clock clock, int confirmAbove, int maxLetters) {
    this.dataSource = dataSource;
    this.clock = clock;
    this.confirmAbove = confirmAbove;
    this.maxLetters = maxLetters;
  }

  /** The PENDING letters {@code selection} covers now. */
  public ReplayPreview preview(ReplaySelection selection) {
    Statement stats =
        pending(
            new Statement(
                "SELECT count(*) AS n, array_agg(DISTINCT topic ORDER BY topic) AS topics,"
                    + " array_agg(DISTINCT consumer ORDER BY consumer) AS consumers,"
                    + " min(first_failure) AS oldest, max(first_failure) AS newest"
                    + " FROM postbox_dead_letter"),
            selection);
    record Stats(
        long n, List<String> topics, List<String> consumers, Instant oldest, Instant newest) {}
    Stats s =
        stats
            .list(
                dataSource,
                "the replay preview",
                rs ->
                    new Stats(
                        rs.getLong("n"),
                        texts(rs.getArray("topics")),
                        texts(rs.getArray("consumers")),
                        Statement.instant(rs, "oldest"),
                        Statement.instant(rs, "newest")))
            .getFirst();
    Statement sample =
        pending(
            new Statement(
                "SELECT " + DeadLetterQueries.SUMMARY_COLUMNS + " FROM postbox_dead_letter"),
            selection);
    sample.then(" ORDER BY first_failure, id LIMIT ?", SAMPLE);
    List<DeadLetterSummary> letters =
        sample.list(dataSource, "the replay preview", DeadLetterQueries::summary);
    return new ReplayPreview(
        selection.describe(),
        s.n(),
        s.topics(),
        s.consumers(),
        Optional.ofNullable(s.oldest()),
        Optional.ofNullable(s.newest()),
        letters,
        s.n() > confirmAbove,
        Long.toString(s.n()));
  }

  /**
   * Creates a RUNNING job over the PENDING letters {@code selection} covers now, and its audit row.
   *
   * @throws IllegalArgumentException if the reason is blank, the selection covers more than the
   *     maximum, or it covers more than the confirmation threshold and {@code confirmation} is not
   *     its count
   * @throws IllegalStateException if it covers no PENDING letter
   */
  public ReplayJob create(
      String actor,
      ReplaySelection selection,
      String reason,
      Optional<String> confirmation,
      ReplayRoute route) {
    if (reason == null || reason.isBlank()) {
      throw new IllegalArgumentException("give a reason for the replay job");
    }
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        long id = insertJob(c, actor, selection, reason.trim(), route);
        int n = insertLetters(c, id, selection);
        check(n, selection, confirmation);
        try (PreparedStatement ps =
            c.prepareStatement("UPDATE postbox_replay_job SET total = ? WHERE id = ?")) {
          ps.setInt(1, n);
          ps.setLong(2, id);
          ps.executeUpdate();
        }
        audit(c, actor, id, selection, n, reason.trim(), route);
        c.commit();
        return get(id).orElseThrow();
      } catch (RuntimeException | SQLException e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw new AdminException("could not create the replay job", e);
    }
  }

  private void check(int n, ReplaySelection selection, Optional<String> confirmation) {
    if (n == 0) {
      throw new IllegalStateException("no PENDING dead letter to replay: " + selection.describe());
    }
    if (n > maxLetters) {
      throw new IllegalArgumentException(
          "the selection covers more than "
              + maxLetters
              + " letters (the most one replay job covers): narrow it");
    }
    if (n > confirmAbove) {
      String typed = confirmation.map(String::trim).orElse("");
      if (!typed.equals(Integer.toString(n))) {
        throw new IllegalArgumentException(
            typed.isEmpty()
                ? "confirm the replay of " + n + " letters by typing their count, " + n
                : "the selection covers "
                    + n
                    + " letters now, not "
                    + typed
                    + ": preview it again and confirm that count");
      }
    }
  }

  private long insertJob(
      Connection c, String actor, ReplaySelection selection, String reason, ReplayRoute route)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO postbox_replay_job (created_at, created_by, reason, selection, route,"
                + " state, total) VALUES (?, ?, ?, ?, ?, 'RUNNING', 0) RETURNING id")) {
      ps.setTimestamp(1, Timestamp.from(clock.instant()));
      ps.setString(2, actor);
      ps.setString(3, reason);
      ps.setString(4, selection.describe());
      ps.setString(5, route.name());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** The selection's PENDING letters, oldest first; one more than the maximum at most. */
  private int insertLetters(Connection c, long id, ReplaySelection selection) throws SQLException {
    Statement s =
        new Statement("INSERT INTO postbox_replay_job_letter (job_id, seq, dead_letter_id) SELECT ")
            .then(
                "?, row_number() OVER (ORDER BY first_failure, id), id FROM postbox_dead_letter",
                id);
    pending(s, selection).then(" ORDER BY first_failure, id LIMIT ?", maxLetters + 1);
    return s.update(c);
  }

  private static void audit(
      Connection c,
      String actor,
      long id,
      ReplaySelection selection,
      int n,
      String reason,
      ReplayRoute route)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO postbox_replay_audit (by_whom, what, how_many, action, reason,"
                + " dead_letter_id) VALUES (?, ?, ?, 'REPLAY_JOB', ?, ?)")) {
      ps.setString(1, actor);
      ps.setString(
          2,
          "replay job "
              + id
              + ": "
              + selection.describe()
              + (route == ReplayRoute.BROADCAST ? " (broadcast)" : ""));
      ps.setInt(3, n);
      ps.setString(4, reason);
      ps.setObject(5, selection.letterId().orElse(null), java.sql.Types.BIGINT);
      ps.executeUpdate();
    }
  }

  /** One job. */
  public Optional<ReplayJob> get(long id) {
    return new Statement("SELECT " + JOB_COLUMNS + " FROM postbox_replay_job")
        .where("id = ?", id).list(dataSource, "replay job " + id, ReplayJobQueries::job).stream()
            .findFirst();
  }

  /** The jobs, newest first. */
  public Page<ReplayJob> list(PageRequest page) {
    Statement s = new Statement("SELECT " + JOB_COLUMNS + " FROM postbox_replay_job");
    if (page.after().isPresent()) {
      s.where("id < ?", Cursors.decodeLong(page.after().get()));
    }
    s.then(" ORDER BY id DESC LIMIT ?", page.limit() + 1);
    List<ReplayJob> rows = s.list(dataSource, "replay jobs", ReplayJobQueries::job);
    return DeadLetterQueries.page(rows, page, j -> Cursors.encodeLong(j.id()));
  }

  /**
   * Moves job {@code id} from one of {@code from} to {@code to}, by {@code actor}; its lease ends
   * (a runner working it stops after its current letter).
   *
   * @throws NoSuchElementException if there is no such job
   * @throws IllegalStateException if it is in none of the states {@code from}
   */
  public ReplayJob change(long id, String actor, ReplayJob.State to, ReplayJob.State... from) {
    String[] names = Arrays.stream(from).map(Enum::name).toArray(String[]::new);
    String sql =
        "UPDATE postbox_replay_job SET state = ?, changed_by = ?, owner = NULL,"
            + " lease_until = '-infinity', finished_at = CASE WHEN ? THEN ?::timestamptz END"
            + " WHERE id = ? AND state = ANY (?)";
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, to.name());
      ps.setString(2, actor);
      ps.setBoolean(3, to == ReplayJob.State.CANCELLED);
      ps.setTimestamp(4, Timestamp.from(clock.instant()));
      ps.setLong(5, id);
      ps.setArray(6, c.createArrayOf("text", names));
      int n = ps.executeUpdate();
      ReplayJob job = get(id).orElseThrow(() -> new NoSuchElementException("no replay job " + id));
      if (n == 0) {
        throw new IllegalStateException(
            "replay job " + id + " is " + job.state() + ", not " + String.join(" or ", names));
      }
      return job;
    } catch (SQLException e) {
      throw new AdminException("could not change replay job " + id, e);
    }
  }

  private static Statement pending(Statement s, ReplaySelection selection) {
    if (selection.letterId().isPresent()) {
      return s.where("id = ?", selection.letterId().get()).where("status = 'PENDING'");
    }
    DeadLetterFilter f = selection.filter().toBuilder().status(Status.PENDING).build();
    return DeadLetterQueries.filtered(s, f);
  }

  static ReplayJob job(ResultSet rs) throws SQLException {
    int replayed = rs.getInt("replayed");
    int skipped = rs.getInt("skipped");
    int failed = rs.getInt("failed");
    int processed = replayed + skipped + failed;
    Optional<Instant> started = Statement.optionalInstant(rs, "started_at");
    Optional<Instant> progress = Statement.optionalInstant(rs, "progress_at");
    return new ReplayJob(
        rs.getLong("id"),
        ReplayJob.State.valueOf(rs.getString("state")),
        Statement.instant(rs, "created_at"),
        rs.getString("created_by"),
        rs.getString("reason"),
        rs.getString("selection"),
        ReplayRoute.valueOf(rs.getString("route")),
        rs.getInt("total"),
        replayed,
        skipped,
        failed,
        processed,
        started,
        progress,
        Statement.optionalInstant(rs, "finished_at"),
        Optional.ofNullable(rs.getString("changed_by")),
        Optional.ofNullable(rs.getString("owner")),
        ReplayJob.rate(processed, started, progress));
  }

  private static List<String> texts(Array a) throws SQLException {
    if (a == null) {
      return List.of();
    }
    try {
      return Arrays.asList((String[]) a.getArray());
    } finally {
      a.free();
    }
  }
}
