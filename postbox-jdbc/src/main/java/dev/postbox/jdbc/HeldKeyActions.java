package dev.postbox.jdbc;

import dev.postbox.jdbc.internal.OperatorAudit;
import dev.postbox.jdbc.internal.ParkedKeys;
import dev.postbox.jdbc.internal.Transactions;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The operator's actions on keys that wait — a parked key released or its head skipped, an outbox
 * row that holds its key or topic retried or skipped — each audited for its actor in the same
 * transaction. {@link Replayer} exposes them; this class does them. Stateless beyond its actor.
 */
final class HeldKeyActions {

  private final DataSource dataSource;
  private final String by;

  HeldKeyActions(DataSource dataSource, String by) {
    this.dataSource = dataSource;
    this.by = by;
  }

  /** See {@link Replayer#releaseParked}. */
  int releaseParked(String consumer, String key) {
    Objects.requireNonNull(consumer, "consumer");
    Objects.requireNonNull(key, "key");
    return Transactions.inTransaction(
        dataSource,
        "releasing parked key " + key,
        c -> {
          int n = ParkedKeys.release(c, consumer, key);
          OperatorAudit.write(
              c,
              OperatorAudit.Entry.of(
                      by, "RELEASE_PARKED", "parked key '" + key + "' of '" + consumer + "'", n)
                  .parked(consumer, key));
          return n;
        },
        OutboxException::new);
  }

  /** See {@link Replayer#skipParked}. */
  long skipParked(String consumer, String key, String reason) {
    Objects.requireNonNull(consumer, "consumer");
    Objects.requireNonNull(key, "key");
    requireReason(reason);
    return Transactions.inTransaction(
        dataSource,
        "skipping the head of parked key " + key,
        c -> {
          ParkedKeys.Skipped s = ParkedKeys.skip(c, consumer, key, by, reason);
          OperatorAudit.write(
              c,
              OperatorAudit.Entry.of(
                      by,
                      "SKIP_PARKED",
                      "head of parked key '" + key + "' of '" + consumer + "'",
                      1)
                  .reason(reason)
                  .deadLetter(s.deadLetterId(), s.messageId(), consumer, key));
          return s.deadLetterId();
        },
        OutboxException::new);
  }

  /** See {@link Replayer#retryBlocked} and {@link Replayer#skipBlocked}. */
  boolean resolveBlocked(boolean retry, long position, String reason) {
    return Transactions.inTransaction(
        dataSource,
        (retry ? "retrying" : "skipping") + " outbox row " + position,
        c -> {
          Optional<OutboxOperations.Resolved> r =
              OutboxOperations.resolve(c, retry, position, reason, by);
          if (r.isPresent()) {
            OperatorAudit.write(
                c,
                OperatorAudit.Entry.of(
                        by, retry ? "RETRY_BLOCKED" : "SKIP_BLOCKED", "outbox row " + position, 1)
                    .reason(reason)
                    .outbox(position, Optional.of(r.get().messageId()), r.get().key()));
          }
          return r.isPresent();
        },
        OutboxException::new);
  }

  static void requireReason(String reason) {
    Objects.requireNonNull(reason, "reason");
    if (reason.isBlank()) {
      throw new IllegalArgumentException("reason must not be blank");
    }
  }
}
