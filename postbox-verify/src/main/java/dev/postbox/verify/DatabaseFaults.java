package dev.postbox.verify;

import dev.postbox.testkit.PostgresServer;
import dev.postbox.verify.Scenario.Fault;
import java.time.Instant;
import java.util.Optional;

/**
 * Injects the database faults: a fast restart of PostgreSQL, a crash (SIGKILL of every server
 * process) and recovery, the termination of the processes' sessions, and (on a pair, {@code
 * --cluster}) a failover to the standby. They take turns: a terminate or a crash never lands on a
 * server that another of them has down (it would neither fire nor prove anything). On a pair each
 * lands on the server that is the primary at the time.
 */
final class DatabaseFaults {

  private final CampaignEnvironment env;
  private final FaultLog log;

  DatabaseFaults(CampaignEnvironment env, FaultLog log) {
    this.env = env;
    this.log = log;
  }

  /**
   * {@link Fault#POSTGRES_RESTART}, {@link Fault#POSTGRES_CRASH} or {@link
   * Fault#POSTGRES_TERMINATE}.
   */
  synchronized void inject(Fault f) {
    injectLocked(f);
  }

  /** The server that is the primary now (its own lifecycle, not the multi-host URL). */
  private PostgresServer pg() {
    return env.primaryServer();
  }

  private void injectLocked(Fault f) {
    switch (f) {
      case POSTGRES_RESTART -> restartPostgres(f, pg()::restart, "stopped (fast) and started");
      case POSTGRES_CRASH ->
          restartPostgres(
              f, pg()::crash, "crashed (SIGKILL of every server process), recovered and started");
      case POSTGRES_TERMINATE -> {
        int n;
        try {
          n = pg().terminateBackends(ChildSupport.APPLICATION_PREFIX + "%");
        } catch (RuntimeException e) {
          if (env.postmasterStart().isPresent()) {
            throw e; // PostgreSQL is up: a terminate that failed did not fire
          }
          // another database fault (restart, crash) has it down: no session to terminate
          log.note(f.kind + "-skipped", "PostgreSQL is down (another database fault): " + e);
          return;
        }
        if (n > 0) {
          log.fired(f.kind, "postgres", n + " sessions of the processes terminated");
        } else {
          log.note(f.kind + "-skipped", "no session to terminate");
        }
      }
      case POSTGRES_FAILOVER -> failover(f);
      default -> throw new IllegalArgumentException(f + " is not a database fault");
    }
  }

  /**
   * {@code kill -9} of the primary, the promote of its synchronous standby, and the former primary
   * rebuilt as the new one's standby ({@link FailoverPair#inject}, under the environment's lock
   * through {@link CampaignEnvironment#failover()}). Skipped while the primary is down (another
   * database fault).
   */
  private void failover(Fault f) {
    if (env.postmasterStart().isEmpty()) {
      log.note(f.kind + "-skipped", "PostgreSQL is down (another database fault)");
      return;
    }
    FailoverPair pair =
        env.pair()
            .orElseThrow(() ->
                new IllegalStateException("no PostgreSQL standby: a failover needs --cluster"));
    pair.inject(f.kind, env.settings().relay() == RelayMode.CDC, log, env::failover);
  }

  /** Restarts PostgreSQL {@code how}; fired if its postmaster's start time moved on. */
  private void restartPostgres(Fault f, Runnable how, String what) {
    Optional<Instant> before = env.postmasterStart();
    if (before.isEmpty()) {
      // another database fault (a restart, a crash) has it down: this one comes next time
      log.note(f.kind + "-skipped", "PostgreSQL is down (another database fault)");
      return;
    }
    long t0 = System.nanoTime();
    try {
      how.run();
    } finally {
      env.ensureUp();
    }
    Optional<Instant> after = Optional.empty();
    for (int i = 0; i < 100 && after.isEmpty(); i++) {
      after = env.postmasterStart();
      if (after.isEmpty()) {
        Campaign.sleep(100);
      }
    }
    if (before.isPresent() && after.isPresent() && after.get().isAfter(before.get())) {
      log.fired(
          f.kind,
          "postgres",
          what + ", back after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    } else {
      log.notFired(f.kind, "postgres", "start time before " + before + ", after " + after);
    }
  }
}
