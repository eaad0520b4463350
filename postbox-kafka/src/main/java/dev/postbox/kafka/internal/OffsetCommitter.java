package dev.postbox.kafka.internal;

import dev.postbox.core.engine.OffsetTracker;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits each partition's finished prefix, and proves the group membership with a broker-checked
 * commit when the {@link MembershipFence} suspects it or its last proof is getting old.
 *
 * <p>Remembers what it committed per partition so that a partition is committed only when its
 * prefix advanced; a failed commit is forgotten and retried with the next one. With {@code
 * AT_MOST_ONCE} (offsets committed before handling, by {@link CommitBeforeHandling}) it commits
 * nothing and the fence opens without a commit. Poll thread only.
 */
public final class OffsetCommitter {

  private static final Logger log = LoggerFactory.getLogger(OffsetCommitter.class);

  /** The bound of the membership proof's position lookups and commit. */
  static final Duration VERIFY_TIMEOUT = Duration.ofSeconds(2);

  private final Consumer<byte[], byte[]> consumer;
  private final String name;
  private final boolean atMostOnce;
  private final Map<TopicPartition, OffsetTracker> trackers;
  private final Map<TopicPartition, Long> committed = new HashMap<>();
  private final MembershipFence fence;
  // whether a commit that only proves the membership is on its way (poll thread only)
  private boolean proofInFlight;
  // proofs that failed since the last one that succeeded: only the first is logged as a warning
  // (a rebalance refuses them at every poll until it ends)
  private int failedProofs;

  /**
   * A committer for subscription {@code name} through {@code consumer}, of the partitions in {@code
   * trackers} (a live map); {@code atMostOnce}: commits nothing (see the class comment). Every
   * successful commit is reported to {@code fence} ({@link MembershipFence#committed()}).
   */
  public OffsetCommitter(
      Consumer<byte[], byte[]> consumer,
      String name,
      boolean atMostOnce,
      Map<TopicPartition, OffsetTracker> trackers,
      MembershipFence fence) {
    this.consumer = consumer;
    this.name = name;
    this.atMostOnce = atMostOnce;
    this.trackers = trackers;
    this.fence = fence;
  }

  /** Commits the finished prefix of every partition that advanced ({@code sync}: and waits). */
  public void commitFinished(boolean sync) {
    if (atMostOnce) {
      return;
    }
    commit(advanced(trackers), sync);
  }

  /**
   * The offsets of {@code trackers}' partitions whose finished prefix advanced past what was
   * committed.
   */
  public Map<TopicPartition, OffsetAndMetadata> advanced(
      Map<TopicPartition, OffsetTracker> trackers) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    trackers.forEach((tp, tracker) -> {
      OptionalLong c = tracker.committable();
      if (c.isPresent() && c.getAsLong() > committed.getOrDefault(tp, -1L)) {
        offsets.put(tp, new OffsetAndMetadata(c.getAsLong()));
      }
    });
    return offsets;
  }

  /**
   * Commits {@code offsets}: {@code sync} waits at most {@link
   * ConsumerSettings#SYNC_COMMIT_TIMEOUT} (a failure is logged: the records are delivered again);
   * otherwise asynchronously. Nothing with {@code AT_MOST_ONCE}.
   */
  public void commit(Map<TopicPartition, OffsetAndMetadata> offsets, boolean sync) {
    if (atMostOnce || offsets.isEmpty()) {
      return;
    }
    offsets.forEach((tp, o) -> committed.put(tp, o.offset()));
    if (sync) {
      try {
        consumer.commitSync(offsets, ConsumerSettings.SYNC_COMMIT_TIMEOUT);
        fence.committed();
      } catch (RuntimeException e) {
        offsets.keySet().forEach(committed::remove);
        log.warn("{}: offset commit failed (will be redelivered): {}", name, e.toString());
      }
    } else {
      consumer.commitAsync(
          offsets,
          (done, error) -> {
            if (error != null) {
              offsets.keySet().forEach(committed::remove); // retried with the next commit
            } else {
              fence.committed();
            }
          });
    }
  }

  /**
   * Proves the membership again when the fence says it is due ({@link MembershipFence#proofDue()}):
   * commits the safe offsets of every assigned partition again, asynchronously (one at a time), so
   * that a member with nothing new to commit still shows the group coordinator accepts it. With
   * {@code AT_MOST_ONCE} nothing is committed: offsets were committed before handling, so a zombie
   * cannot duplicate, and the fence is told so. Nothing while nothing is assigned.
   */
  public void proveMembership() {
    if (!fence.proofDue() || proofInFlight) {
      return;
    }
    if (atMostOnce || consumer.assignment().isEmpty()) {
      fence.committed();
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> offsets;
    try {
      offsets = safeOffsets(Duration.ZERO);
    } catch (RuntimeException e) {
      return; // a position not known yet: the next poll tries again
    }
    proofInFlight = true;
    consumer.commitAsync(
        offsets,
        (done, error) -> {
          proofInFlight = false;
          if (error == null) {
            offsets.forEach((tp, o) -> committed.put(tp, o.offset()));
            fence.committed();
          }
        });
  }

  /**
   * Offsets that are safe to commit for every assigned partition: the lowest unfinished record, or
   * the fetch position of a partition with nothing dispatched (looked up within {@code timeout}).
   */
  private Map<TopicPartition, OffsetAndMetadata> safeOffsets(Duration timeout) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    for (TopicPartition tp : consumer.assignment()) {
      OffsetTracker t = trackers.get(tp);
      OptionalLong c = t == null ? OptionalLong.empty() : t.committable();
      long offset = c.isPresent() ? c.getAsLong() : consumer.position(tp, timeout);
      offsets.put(tp, new OffsetAndMetadata(offset));
    }
    return offsets;
  }

  /**
   * The poll loop stalled longer than the fence allows (a process pause, a long rebalance): proves
   * this member still belongs to the group before workers start more records, with a synchronous
   * commit of offsets that are safe to commit (the lowest unfinished record, or the fetch position
   * of a partition with nothing dispatched). The coordinator rejects it from a member of an older
   * generation; the consumer then rejoins in its next poll, where the lost partitions' trackers are
   * revoked and their records never start here. On success {@code fence} opens; on failure it stays
   * shut (the next poll tries again).
   */
  public void verifyMembership() {
    if (atMostOnce) {
      fence.verified(); // offsets were committed before handling: a zombie cannot duplicate
      return;
    }
    try {
      Map<TopicPartition, OffsetAndMetadata> offsets = safeOffsets(VERIFY_TIMEOUT);
      if (!offsets.isEmpty()) {
        consumer.commitSync(offsets, VERIFY_TIMEOUT);
        offsets.forEach((tp, o) -> committed.put(tp, o.offset()));
      }
      fence.verified();
      log.info(
          "{}: poll loop stalled; group membership confirmed for {}{}",
          name,
          offsets.keySet(),
          failedProofs > 0 ? " after " + failedProofs + " failed attempts" : "");
      failedProofs = 0;
    } catch (WakeupException e) {
      throw e;
    } catch (RuntimeException e) {
      if (failedProofs++ == 0) {
        log.warn(
            "{}: poll loop stalled and membership not confirmed ({}); records wait for the group"
                + " (further failed attempts are logged at debug level)",
            name,
            e.toString());
      } else {
        log.debug("{}: membership not confirmed ({})", name, e.toString());
      }
    }
  }

  /** Forgets what was committed for {@code partitions}, which left this instance. */
  public void forget(Collection<TopicPartition> partitions) {
    partitions.forEach(committed::remove);
  }
}
