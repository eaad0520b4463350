package dev.postbox.verify;

import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.Fleet.Role;
import dev.postbox.verify.Scenario.Fault;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Injects the process faults into the fleet: {@code kill -9} of a random working process, and
 * SIGSTOP of a relay (past its lease) or a consumer (past its session) followed by SIGCONT.
 */
final class ProcessFaults {

  private final Fleet fleet;
  private final FaultLog log;

  ProcessFaults(Fleet fleet, FaultLog log) {
    this.fleet = fleet;
    this.log = log;
  }

  /** {@link Fault#KILL_9}: SIGKILL of a random working process (the fleet restarts it). */
  void kill(Fault f, SplittableRandom r) {
    List<Child> targets =
        fleet.children().stream().filter(c -> c.wanted() && !c.paused() && c.working()).toList();
    if (targets.isEmpty()) {
      log.note("kill-9-skipped", "no running process");
      return;
    }
    Child c = targets.get(r.nextInt(targets.size()));
    String who = c.toString();
    if (fleet.kill(c)) {
      log.fired(f.kind, who, "SIGKILL; process gone");
    } else {
      log.note("kill-9-skipped", who + " was not running any more");
    }
  }

  /** {@link Fault#PAUSE_RELAY} or {@link Fault#PAUSE_CONSUMER}: SIGSTOP, a wait, SIGCONT. */
  void pause(Fault f, SplittableRandom r) {
    Role role = f == Fault.PAUSE_RELAY ? Role.RELAY : Role.CONSUMER;
    long ms = role == Role.RELAY ? Campaign.LEASE_MS + 1_500 : Campaign.SESSION_MS + 2_500;
    List<Child> targets =
        fleet.children().stream()
            .filter(c -> c.role() == role && c.wanted() && !c.paused() && c.working())
            .toList();
    if (targets.isEmpty()) {
      log.note(f.kind + "-skipped", "no running process");
      return;
    }
    Child c = targets.get(r.nextInt(targets.size()));
    String who = c.toString();
    if (!fleet.pause(c)) {
      log.note(f.kind + "-skipped", who + " was not running any more");
      return;
    }
    long t0 = System.nanoTime();
    Campaign.sleep(ms);
    long stoppedMs = (System.nanoTime() - t0) / 1_000_000;
    if (fleet.resume(c)) {
      log.fired(f.kind, who, "SIGSTOP for " + stoppedMs + " ms, then SIGCONT");
    } else {
      // it died while stopped (of an earlier fault's consequence, e.g. a start-up that
      // found PostgreSQL restarting): preempted, like an armed crash point ended by a kill
      log.note(f.kind + "-preempted", who + " was not alive at SIGCONT");
    }
  }
}
