package dev.postbox.admin;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The relays as the tables see them: live instances (heartbeats) and the 64 lanes with their owner,
 * fencing epoch, lease and pending rows.
 */
public record RelayStatus(List<Instance> instances, List<Lane> lanes) {

  public RelayStatus {
    instances = List.copyOf(instances);
    lanes = List.copyOf(lanes);
  }

  /**
   * A relay instance.
   *
   * @param sinceSeen time since its last heartbeat (database clock)
   * @param idle waiting for work (notified on inserts)
   */
  public record Instance(
      String id, Instant startedAt, Instant seenAt, Duration sinceSeen, boolean idle) {}

  /**
   * A lane.
   *
   * @param owner the instance holding its lease, if any
   * @param leased whether the lease is current
   * @param pending pending outbox rows of the lane
   * @param oldestPendingAge age of the oldest of them (zero when none)
   */
  public record Lane(
      int lane,
      Optional<String> owner,
      long epoch,
      Instant leaseUntil,
      boolean leased,
      long pending,
      Duration oldestPendingAge) {}
}
