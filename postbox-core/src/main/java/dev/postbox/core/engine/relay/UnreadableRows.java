package dev.postbox.core.engine.relay;

import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher.PendingPublish;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Keeps rows the store could not read away from the publisher: an unreadable row fails at once
 * (permanently), and the later rows of its key in the same batch are not sent (they wait behind it,
 * as they would behind a row the broker refused).
 */
final class UnreadableRows {

  private UnreadableRows() {}

  /** Thrown (as an outcome's error) for a row the store could not read into a message. */
  static final class UnreadableRowException extends RuntimeException {
    UnreadableRowException(String message) {
      super(message, null, false, false);
    }
  }

  /**
   * The outcomes decided without the publisher, by index, or null when every row is readable: a
   * permanent failure for each unreadable row, a transient "not sent" for each later row of its
   * key.
   */
  static PublishOutcome[] decide(List<OutboxRecord> batch) {
    PublishOutcome[] decided = null;
    Set<String> heldKeys = new HashSet<>();
    for (int i = 0; i < batch.size(); i++) {
      OutboxRecord r = batch.get(i);
      Optional<String> key = r.message().key();
      if (!r.readable()) {
        if (decided == null) {
          decided = new PublishOutcome[batch.size()];
        }
        decided[i] =
            new PublishOutcome.Failed(
                new UnreadableRowException("the outbox row cannot be read: " + r.unreadable()),
                true);
        key.ifPresent(heldKeys::add);
      } else if (key.isPresent() && heldKeys.contains(key.get())) {
        decided[i] =
            new PublishOutcome.Failed(
                new IllegalStateException("not sent: behind an unreadable row of its key"), false);
      }
    }
    return decided;
  }

  /** The publisher's outcomes for the rows it was given, merged with the decided ones. */
  static PendingPublish merge(PublishOutcome[] decided, PendingPublish sent) {
    return () -> {
      List<PublishOutcome> got = sent.outcomes();
      List<PublishOutcome> out = new ArrayList<>(decided.length);
      int j = 0;
      for (PublishOutcome d : decided) {
        out.add(d != null ? d : got.get(j++));
      }
      if (j != got.size()) {
        throw new IllegalStateException(
            "publisher returned " + got.size() + " outcomes for " + j + " messages");
      }
      return out;
    };
  }
}
