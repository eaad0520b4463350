package dev.postbox.kafka;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;

/**
 * What a {@link KafkaSubscriber} is doing, for health checks and for diagnosing a stall.
 *
 * @param running started and not closed
 * @param alive the poll loop runs (reads, keeps the group membership, commits); a running
 *     subscriber that is not alive has failed for good and must be replaced
 * @param failure why the poll loop died, if it did
 * @param assignment the partitions this instance owns now
 * @param fenced whether records wait on the membership fence (the poll loop stalled and this member
 *     has not yet proved that it still belongs to the group)
 * @param lastPoll when {@code poll()} last returned, if it did
 * @param inFlight records read and not yet finished
 */
public record SubscriberState(
    boolean running,
    boolean alive,
    Optional<Throwable> failure,
    Set<TopicPartition> assignment,
    boolean fenced,
    Optional<Instant> lastPoll,
    int inFlight) {

  public SubscriberState {
    Objects.requireNonNull(failure, "failure");
    assignment = Set.copyOf(assignment);
    Objects.requireNonNull(lastPoll, "lastPoll");
  }

  /** Running with a live poll loop. */
  public boolean healthy() {
    return running && alive;
  }
}
