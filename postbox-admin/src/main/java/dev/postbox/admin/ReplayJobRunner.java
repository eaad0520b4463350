package dev.postbox.admin;

import dev.postbox.admin.internal.ReplayJobWork;
import dev.postbox.admin.internal.ReplayJobWork.Claim;
import dev.postbox.admin.internal.ReplayJobWork.Outcome;
import dev.postbox.admin.internal.ReplayJobWork.Step;
import dev.postbox.core.time.Sleeper;
import dev.postbox.jdbc.ReplayInterruptedException;
import dev.postbox.jdbc.ReplayResult;
import java.time.Duration;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Works the RUNNING replay jobs of one database, one letter at a time, each through {@link
 * OperatorActions#replay} of the job's creator (the same audited, rate-limited replay as a single
 * letter's, with its audit row). A runner holds one job at a time under a lease it renews with
 * every letter; a job whose runner stopped (a console restarted) is taken over by the next runner
 * once its lease expires, and carries on from the letters' stored outcomes. Two runners never work
 * one job at once, and a letter is written at most once (its replay checks it is still PENDING).
 *
 * <p>{@link #step()} and {@link #runUntilIdle()} work in the caller's thread; {@link #start()}
 * works in a background thread that waits {@code pollInterval} with the injected {@link Sleeper}
 * when there is nothing to do (or after a failure). Thread-safe.
 */
public final class ReplayJobRunner implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ReplayJobRunner.class);

  private final String instance;
  private final ReplayJobWork work;
  private final Function<String, OperatorActions> actions;
  private final Sleeper sleeper;
  private final Duration pollInterval;
  private Optional<Claim> current = Optional.empty(); // guarded by this
  private volatile Thread thread; // set once, in start()
  private volatile boolean stopping;

  ReplayJobRunner(
      String instance,
      ReplayJobWork work,
      Function<String, OperatorActions> actions,
      Sleeper sleeper,
      Duration pollInterval) {
    this.instance = instance;
    this.work = work;
    this.actions = actions;
    this.sleeper = sleeper;
    this.pollInterval = pollInterval;
  }

  /** This runner's name (the owner recorded on the job it works). */
  public String instance() {
    return instance;
  }

  /**
   * Works one letter of the job this runner holds, claiming one first if it holds none.
   *
   * @return whether there was something to do (false: no RUNNING job is free)
   * @throws ReplayInterruptedException if interrupted while waiting for the rate (the letter stays
   *     to do)
   */
  public synchronized boolean step() {
    // a second round after losing the job (paused, cancelled, taken over): it may have been
    // resumed meanwhile, or another job waits
    for (int round = 0; round < 2; round++) {
      if (current.isEmpty()) {
        current = work.claim(instance);
        if (current.isEmpty()) {
          return false;
        }
      }
      Claim claim = current.get();
      Step s = work.workNext(claim.jobId(), instance, id -> replay(claim, id));
      if (s == Step.WORKED) {
        return true;
      }
      current = Optional.empty();
      if (s == Step.FINISHED) {
        log.info("replay job {} done", claim.jobId());
        return true;
      }
      if (s == Step.BUSY) {
        return false;
      }
    }
    return true;
  }

  /** Steps until there is nothing to do; returns how many steps did something. */
  public int runUntilIdle() {
    int n = 0;
    while (step()) {
      n++;
    }
    return n;
  }

  private Outcome replay(Claim claim, long letter) {
    ReplayResult r;
    try {
      r = actions.apply(claim.createdBy()).replay(letter, claim.route());
    } catch (NoSuchElementException e) {
      return Outcome.SKIPPED; // purged meanwhile
    }
    return !r.replayed().isEmpty()
        ? Outcome.REPLAYED
        : !r.failed().isEmpty() ? Outcome.FAILED : Outcome.SKIPPED;
  }

  /** Starts working in a background thread (once). */
  public synchronized ReplayJobRunner start() {
    if (thread == null) {
      Thread t =
          Thread.ofPlatform()
              .name("postbox-replay-jobs-" + instance)
              .daemon()
              .unstarted(this::loop);
      thread = t;
      t.start();
    }
    return this;
  }

  private void loop() {
    boolean warned = false;
    while (!stopping) {
      boolean worked;
      try {
        worked = step();
        warned = false;
      } catch (ReplayInterruptedException e) {
        return;
      } catch (RuntimeException e) {
        // a failure while working a job is a warning, once per streak (a database down fails
        // every poll); an idle poll's failure is for the debug log (the application reports its
        // database's state itself)
        if (!warned && holdsJob()) {
          log.warn("replay jobs: {} (trying again every {})", e.toString(), pollInterval);
          warned = true;
        } else {
          log.debug("replay jobs: {}", e.toString());
        }
        worked = false;
      }
      if (!worked) {
        try {
          sleeper.sleep(pollInterval);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  private synchronized boolean holdsJob() {
    return current.isPresent();
  }

  /** Stops the background thread after the letter in hand; its job is free once the lease ends. */
  @Override
  public void close() {
    stopping = true;
    Thread t = thread;
    if (t != null) {
      t.interrupt();
      try {
        t.join(Duration.ofSeconds(30));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public String toString() {
    return "ReplayJobRunner[" + Objects.requireNonNull(instance) + "]";
  }
}
