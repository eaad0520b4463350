package dev.postbox.verify;

import dev.postbox.testkit.PostgresPair;
import dev.postbox.testkit.PostgresServer;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;

/**
 * A campaign's PostgreSQL on a cluster ({@code --cluster}, both transports): a primary with a
 * streaming standby, reached through the multi-host URL; whether a failover can fire now, and the
 * failover itself as the {@code postgres-failover} fault ({@code kill -9} of the primary, the
 * standby promoted, the former primary rebuilt as its standby), logged with how long each step
 * took. By default a synchronous standby, so that a commit the primary acknowledged survives its
 * loss: a row the checker misses after a failover is one Postbox lost, not one PostgreSQL did. With
 * {@code --async-standby} an asynchronous one, which may lose the last acknowledged commits: the
 * producers' {@link CommitJournal}s let the checker count those apart.
 */
final class FailoverPair implements AutoCloseable {

  /** How long a failover that waits for the CDC slot's copy on the standby waits at most. */
  static final Duration SLOT_SYNC_WAIT = Duration.ofSeconds(60);

  /**
   * With an asynchronous standby, how long its stream is cut before each failover's kill: the
   * commits the primary acknowledges meanwhile are lost with it.
   */
  static final Duration LAG = Duration.ofSeconds(1);

  /** What a {@link #failover()} did, and how long each step took from the kill. */
  record Failover(
      String killed,
      String promoted,
      Duration promotedAfter,
      Duration rejoinedAfter,
      boolean streamCut) {}

  private final PostgresPair pair;
  private final boolean synchronous;
  private final Path journals;
  private int failovers;

  private FailoverPair(PostgresPair pair, boolean synchronous, Path journals) {
    this.pair = pair;
    this.synchronous = synchronous;
    this.journals = journals;
  }

  /**
   * Starts a pair in {@code dir}, commit timestamps on (the checker orders commits by them); its
   * standby {@code synchronous} or asynchronous ({@code --async-standby}); the processes journal
   * their acknowledged commits in {@code journals} ({@link CommitJournal}, {@link AppliedJournal}).
   */
  static FailoverPair start(Path dir, boolean synchronous, Path journals) {
    PostgresPair pair =
        PostgresPair.builder()
            .synchronous(synchronous)
            .directory(dir)
            .serverConfig("track_commit_timestamp", "on")
            .startupTimeout(Duration.ofMinutes(3))
            .build();
    try {
      pair.start();
    } catch (RuntimeException e) {
      pair.close();
      throw e;
    }
    return new FailoverPair(pair, synchronous, journals);
  }

  /** PostgreSQL as the processes reach it: the multi-host URL (no lifecycle of its own). */
  PostgresServer current() {
    return pair.current();
  }

  /** Whether the standby is synchronous. */
  boolean synchronous() {
    return synchronous;
  }

  /** "a synchronous standby" or "an asynchronous standby", for the start-up line. */
  String standbyKind() {
    return synchronous ? "a synchronous standby" : "an asynchronous standby";
  }

  /** The folder of the processes' journals, which the checker reads. */
  Path journals() {
    return journals;
  }

  /** The journal file of process {@code instance}, of the kind {@code suffix} names. */
  String journal(String instance, String suffix) {
    return journals.resolve(instance + suffix).toString();
  }

  /** The server that is the primary now. */
  PostgresServer activePrimary() {
    return pair.activePrimary();
  }

  /** Whether the standby runs and streams from the primary, asked of the primary. */
  boolean standbyStreams() {
    try (Connection c = DriverManager.getConnection(pair.activePrimary().jdbcUrl())) {
      return HistoryQueries.count(
              c,
              "SELECT count(*) FROM pg_stat_replication WHERE application_name = '"
                  + PostgresPair.STANDBY_NAME
                  + "' AND state = 'streaming'")
          == 1;
    } catch (SQLException | RuntimeException e) {
      return false;
    }
  }

  /**
   * Whether the standby holds a synchronised, persistent copy of every failover slot of the primary
   * (and the primary has one): the CDC relay's slot survives a failover then. With {@code within}
   * above zero, waits up to that long, a standby snapshot logged on the primary each second (the
   * standby's copy becomes persistent only once the primary's slot moved past the WAL it has, which
   * takes such a record).
   */
  boolean failoverSlotsSynced(Duration within) {
    long deadline = System.nanoTime() + within.toNanos();
    while (true) {
      PostgresServer primary = pair.activePrimary();
      PostgresServer standby = primary == pair.primary() ? pair.standby() : pair.primary();
      try (Connection p = DriverManager.getConnection(primary.jdbcUrl());
          Connection q = DriverManager.getConnection(standby.jdbcUrl())) {
        long slots =
            HistoryQueries.count(p, "SELECT count(*) FROM pg_replication_slots WHERE failover");
        long synced =
            HistoryQueries.count(
                q,
                "SELECT count(*) FROM pg_replication_slots WHERE failover AND synced AND NOT"
                    + " temporary");
        if (slots > 0 && synced >= slots) {
          return true;
        }
        if (System.nanoTime() >= deadline) {
          return false;
        }
        HistoryQueries.count(p, "SELECT count(*) FROM (SELECT pg_log_standby_snapshot()) s");
      } catch (SQLException e) {
        if (System.nanoTime() >= deadline) {
          return false;
        }
      }
      Campaign.sleep(1_000);
    }
  }

  /**
   * {@code kill -9} of the primary, the promote of its standby, and the former primary rebuilt as
   * the new primary's standby. A caller that also restarts the primary (another database fault)
   * calls this under the lock it restarts under, so that the killed primary is never started beside
   * the promoted one.
   *
   * @throws IllegalStateException if the promote or the rejoin failed
   */
  synchronized Failover failover() {
    String killed = address(pair.activePrimary());
    // an asynchronous standby falls behind, as one does over a lost link: its stream cut (see
    // cutStream), the primary goes on acknowledging commits the standby never receives, then dies
    boolean cut = !synchronous && cutStream();
    if (cut) {
      Campaign.sleep(LAG.toMillis());
    }
    long t0 = System.nanoTime();
    pair.killPrimary();
    pair.promote();
    Duration promoted = Duration.ofNanos(System.nanoTime() - t0);
    String now = address(pair.activePrimary());
    pair.rejoin();
    return new Failover(killed, now, promoted, Duration.ofNanos(System.nanoTime() - t0), cut);
  }

  /**
   * The {@code postgres-failover} fault through {@code how} (this pair's {@link #failover()}, under
   * the caller's lock if it has one); logged as {@code kind} to {@code log}, fired once the standby
   * was promoted. Skipped while the standby does not stream (a rejoin that failed: a promote would
   * have nothing to promote). With the CDC relay every other failover first waits until the standby
   * holds the relay's slot (the relay then resumes from the synchronised copy); the others come
   * whenever they come and find it synchronised or not (the relay then makes the slot again and
   * republishes what is pending). Returns 1 if it fired.
   */
  int inject(String kind, boolean cdc, FaultLog log, java.util.function.Supplier<Failover> how) {
    if (!standbyStreams()) {
      log.note(kind + "-skipped", "the standby is not streaming");
      return 0;
    }
    String slot = "";
    if (cdc) {
      boolean await = failovers++ % 2 == 0;
      long t0 = System.nanoTime();
      boolean synced = failoverSlotsSynced(await ? SLOT_SYNC_WAIT : Duration.ZERO);
      slot =
          "; the CDC slot "
              + (synced ? "synchronised on the standby" : "not synchronised on the standby")
              + (await
                  ? " (waited " + (System.nanoTime() - t0) / 1_000_000 + " ms for it)"
                  : " (not waited for)");
    }
    Failover r = how.get();
    log.fired(
        kind,
        "postgres",
        "primary "
            + r.killed()
            + " killed -9, standby "
            + r.promoted()
            + " promoted (writable "
            + r.promotedAfter().toMillis()
            + " ms after the kill"
            + (synchronous ? "" : "; the standby's stream cut " + LAG.toMillis() + " ms before it")
            + "), the former primary its "
            + (synchronous ? "synchronous" : "asynchronous")
            + " standby again after "
            + r.rejoinedAfter().toMillis()
            + " ms"
            + slot);
    return 1;
  }

  /**
   * Cuts the standby off the primary: the primary's {@code pg_hba.conf} refuses replication
   * connections from then on (reloaded), and its WAL sender to the standby is terminated; whether
   * there was one. The primary is killed next and rebuilt from a base backup of the promoted server
   * by the rejoin, so its changed file goes with it.
   */
  private boolean cutStream() {
    try (Connection c = DriverManager.getConnection(pair.activePrimary().jdbcUrl())) {
      java.nio.file.Path hba;
      try (java.sql.Statement st = c.createStatement();
          java.sql.ResultSet rs = st.executeQuery("SHOW hba_file")) {
        rs.next();
        hba = java.nio.file.Path.of(rs.getString(1));
      }
      // the first matching line decides: the refusals go first
      java.nio.file.Files.writeString(
          hba,
          "host replication all 127.0.0.1/32 reject\nhost replication all ::1/128 reject\n"
              + java.nio.file.Files.readString(hba));
      HistoryQueries.count(c, "SELECT count(*) FROM (SELECT pg_reload_conf() AS r) s WHERE r");
      // the pid first, then the terminate: a function in the view's WHERE would run on every
      // session the view joins before the filter
      long pid =
          HistoryQueries.count(
              c,
              "SELECT coalesce(max(pid), 0) FROM pg_stat_replication WHERE application_name = '"
                  + PostgresPair.STANDBY_NAME
                  + "'");
      return pid > 0
          && HistoryQueries.count(
                  c,
                  "SELECT count(*) FROM (SELECT pg_terminate_backend(" + pid + ") AS t) s WHERE t")
              == 1;
    } catch (SQLException | java.io.IOException e) {
      return false;
    }
  }

  /** {@code host:port} of {@code s}. */
  private static String address(PostgresServer s) {
    String url = s.jdbcUrl();
    return url.substring(
        "jdbc:postgresql://".length(), url.indexOf('/', "jdbc:postgresql://".length()));
  }

  @Override
  public void close() {
    pair.close();
  }
}
