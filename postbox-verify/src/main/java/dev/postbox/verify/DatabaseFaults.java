package dev.postbox.verify;

import dev.postbox.testkit.PostgresServer;
import dev.postbox.verify.Scenario.Fault;
import java.time.Instant;
import java.util.Optional;

/**
 * Injects the database faults: a fast restart of PostgreSQL, a crash (SIGKILL of every server
 * process) and recovery, and the termination of the processes' sessions. They take turns: a
 * terminate or a crash never lands on a server that another of them has down (it would neither fire
 * nor prove anything).
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

  private PostgresServer pg() {
    return env.pg();
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
      default -> throw new IllegalArgumentException(f + " is not a database fault");
    }
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
