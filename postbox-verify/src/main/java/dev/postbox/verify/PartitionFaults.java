package dev.postbox.verify;

import dev.postbox.verify.Fleet.Child;
import dev.postbox.verify.NetworkPartitions.Cut;
import dev.postbox.verify.Scenario.Fault;
import java.util.SplittableRandom;

/**
 * Injects the network partitions: the relay in its namespace loses PostgreSQL (past its lease, so
 * the other relay takes its lanes while its batch may still reach the broker), or the consumer in
 * its namespace loses the broker (past its session, so its partitions move while it still writes to
 * PostgreSQL); then the cut is healed.
 */
final class PartitionFaults {

  private final CampaignEnvironment env;
  private final FaultLog log;

  PartitionFaults(CampaignEnvironment env, FaultLog log) {
    this.env = env;
    this.log = log;
  }

  /** One partition of {@code f}'s kind: cut, a seeded wait, heal. */
  void inject(Fault f, SplittableRandom r) {
    NetworkPartitions net = env.network().orElseThrow();
    boolean relay = f == Fault.PARTITION_RELAY_POSTGRES;
    Cut cut = relay ? Cut.RELAY_FROM_POSTGRES : Cut.CONSUMER_FROM_BROKER;
    String name =
        relay ? CampaignEnvironment.PARTITIONED_RELAY : CampaignEnvironment.PARTITIONED_CONSUMER;
    Child c =
        env.fleet().children().stream()
            .filter(x -> x.name().equals(name))
            .findFirst()
            .orElseThrow();
    if (!c.working() || c.paused()) {
      log.note(f.kind + "-skipped", c + " was not running");
      return;
    }
    long ms =
        relay
            ? Campaign.LEASE_MS + 1_000 + r.nextInt(5_000)
            : Campaign.SESSION_MS + 1_000 + r.nextInt(5_000);
    String who = c.toString();
    net.cut(cut);
    long t0 = System.nanoTime();
    try {
      Campaign.sleep(ms);
    } finally {
      net.heal(cut);
    }
    log.fired(
        f.kind,
        who,
        (relay ? "PostgreSQL" : "broker")
            + " unreachable (blackhole route) for "
            + (System.nanoTime() - t0) / 1_000_000
            + " ms, then healed");
  }

  /** Removes every cut still in place (a failed heal); for the end of a phase. */
  void healAll() {
    env.network()
        .ifPresent(n -> {
          for (Cut c : Cut.values()) {
            n.healQuietly(c);
          }
        });
  }
}
