package dev.postbox.core.engine.relay;

import dev.postbox.core.Message;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.relay.UnpublishableRows;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.core.spi.RelayStore;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Marks the rows the relay could not publish, with the hold the policy gives them, and reports each
 * once (a WARN line, a count). Used by the publishing thread only.
 */
final class UnpublishableRowMarker {

  private static final Logger log = LoggerFactory.getLogger(RelayEngine.class);

  private final String instanceId;
  private final UnpublishableRows policy;
  private final RelayStore store;
  private final PostboxMetrics.Counter counter;

  UnpublishableRowMarker(
      String instanceId,
      UnpublishableRows policy,
      RelayStore store,
      PostboxMetrics.Counter counter) {
    this.instanceId = instanceId;
    this.policy = policy;
    this.store = store;
    this.counter = counter;
  }

  /** What an unpublishable row holds under the configured policy. */
  private RelayStore.Hold holdFor(PublishOutcome.Failed f) {
    if (policy == UnpublishableRows.SKIP) {
      // a topic that is missing or refused would skip every row of the topic: it holds even so
      return f.permanent() ? RelayStore.Hold.NONE : RelayStore.Hold.TOPIC;
    }
    return f.topicWide() ? RelayStore.Hold.TOPIC : RelayStore.Hold.KEY;
  }

  /**
   * Marks one row the publisher could not publish, and says so once at WARN; returns whether it was
   * marked (false: the lease was lost, and the lane's new owner meets the row).
   */
  boolean mark(
      String owner, Collection<LaneLease> leases, OutboxRecord r, PublishOutcome.Failed f) {
    RelayStore.Hold hold = holdFor(f);
    String error = String.valueOf(f.error());
    int marked = store.markUnpublishable(owner, leases, List.of(r), error, hold);
    if (marked == 0) {
      return false;
    }
    counter.increment();
    Message m = r.message();
    String key = m.key().map(k -> "key '" + k + "'").orElse("no key");
    String behind =
        switch (hold) {
          case NONE -> "skipped; later rows of its key go on without it";
          case KEY -> "it holds the later rows of its " + key;
          case TOPIC ->
              "it holds every row of topic '" + m.topic() + "' and the later rows of its " + key;
        };
    log.warn(
        "relay {}: outbox row {} (message {}, topic '{}', {}) cannot be published: {}; {}{}",
        instanceId,
        r.position(),
        m.id(),
        m.topic(),
        key,
        error,
        behind,
        hold == RelayStore.Hold.NONE
            ? ""
            : " until an operator retries or skips it (OutboxOperations)");
    return true;
  }

  /** The keys and topics of unpublishable rows met so far in one batch. */
  static final class HeldBehind {
    private final Set<String> keys = new HashSet<>();
    private final Set<String> topics = new HashSet<>();

    void add(OutboxRecord r, boolean topicWide) {
      r.message().key().ifPresent(keys::add);
      if (topicWide) {
        topics.add(r.message().topic());
      }
    }

    boolean holds(OutboxRecord r) {
      return topics.contains(r.message().topic())
          || r.message().key().map(keys::contains).orElse(false);
    }
  }
}
