package dev.postbox.core.engine.relay;

import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import java.util.ArrayList;
import java.util.List;

/**
 * One batch's outcomes sorted for settling: the acknowledged rows (to mark published), every
 * failure (to count and report), the unpublishable rows (to mark with their hold) and how many rows
 * are retried. A failed row behind an unpublishable row of its key or topic in the same batch is
 * not retried: it waits behind that row.
 *
 * @param acked the acknowledged rows, in batch order
 * @param acks their acknowledgements, index for index
 * @param failures every failed row, in batch order
 * @param unpublishable the rows that failed permanently or topic-wide, in batch order
 * @param retried how many failed rows are retried (a transient failure when above zero)
 */
record Settlement(
    List<OutboxRecord> acked,
    List<PublishOutcome.Acknowledged> acks,
    List<Failure> failures,
    List<Failure> unpublishable,
    int retried) {

  /** One failed row and its outcome. */
  record Failure(OutboxRecord row, PublishOutcome.Failed outcome) {}

  /** Sorts {@code outcomes}, index for index with {@code batch} (same size). */
  static Settlement of(List<OutboxRecord> batch, List<PublishOutcome> outcomes) {
    List<OutboxRecord> acked = new ArrayList<>(batch.size());
    List<PublishOutcome.Acknowledged> acks = new ArrayList<>(batch.size());
    List<Failure> failures = new ArrayList<>();
    List<Failure> unpublishable = new ArrayList<>();
    UnpublishableRowMarker.HeldBehind held = new UnpublishableRowMarker.HeldBehind();
    int retried = 0;
    for (int i = 0; i < batch.size(); i++) {
      OutboxRecord r = batch.get(i);
      switch (outcomes.get(i)) {
        case PublishOutcome.Acknowledged a -> {
          acked.add(r);
          acks.add(a);
        }
        case PublishOutcome.Failed f -> {
          failures.add(new Failure(r, f));
          if (f.unpublishable()) {
            unpublishable.add(new Failure(r, f));
            held.add(r, f.topicWide());
          } else if (!held.holds(r)) {
            retried++;
          }
        }
      }
    }
    return new Settlement(acked, acks, failures, unpublishable, retried);
  }
}
