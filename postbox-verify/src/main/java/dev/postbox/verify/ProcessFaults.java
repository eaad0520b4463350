package dev.postbox.verify;

import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.Fleet.Role;
import dev.postbox.verify.Scenario.Fault;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.function.Supplier;

/**
 * Injects the process faults into the fleet: {@code kill -9} of a random working process, and
 * SIGSTOP of a relay (past its lease) or a consumer (past its session) followed by SIGCONT. With
 * the CDC relay a relay pause stops the relay that holds the slot lease (the others stand by), and
 * {@link Fault#KILL_ACTIVE_RELAY} kills it.
 */
final class ProcessFaults {

  private final Fleet fleet;
  private final FaultLog log;
  private final Supplier<Optional<String>> slotOwner;

  ProcessFaults(Fleet fleet, FaultLog log) {
    this(fleet, log, Optional::empty);
  }

  /** With {@code slotOwner}: the instance holding the CDC slot lease now, if any. */
  ProcessFaults(Fleet fleet, FaultLog log, Supplier<Optional<String>> slotOwner) {
    this.fleet = fleet;
    this.log = log;
    this.slotOwner = slotOwner;
  }

  /** {@link Fault#KILL_ACTIVE_RELAY}: SIGKILL of the relay streaming the CDC slot. */
  void killActiveRelay(Fault f) {
    Optional<Child> active = activeRelay();
    if (active.isEmpty()) {
      log.note(f.kind + "-skipped", "no relay holds the slot lease now");
      return;
    }
    String who = active.get().toString();
    if (fleet.kill(active.get())) {
      log.fired(f.kind, who, "SIGKILL of the slot's streamer; a standby takes over");
    } else {
      log.note(f.kind + "-skipped", who + " was not running any more");
    }
  }

  /** The working relay that holds the CDC slot lease, if any. */
  private Optional<Child> activeRelay() {
    Optional<String> owner = slotOwner.get();
    return owner.flatMap(o ->
        fleet.children().stream()
            .filter(c -> c.role() == Role.RELAY && c.instance().equals(o))
            .filter(c -> c.wanted() && !c.paused() && c.working())
            .findFirst());
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
    Optional<Child> active = role == Role.RELAY ? activeRelay() : Optional.empty();
    List<Child> targets =
        active.isPresent()
            ? List.of(active.get())
            : fleet.children().stream()
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
