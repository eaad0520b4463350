package dev.postbox.jdbc;

import java.time.Duration;
import java.util.Optional;

/**
 * One CDC relay slot as {@link OperationsProbe#cdcSlots()} reads it: how much WAL it holds back and
 * for how long, whether a relay streams it, and whether it is lost.
 *
 * @param slot the replication slot's name
 * @param present whether the slot exists ({@code false}: dropped; the relay recovers it)
 * @param active whether a walsender streams it now
 * @param walStatus PostgreSQL's {@code wal_status} ({@code reserved}, {@code extended}, {@code
 *     unreserved}, {@code lost}); empty when missing or before PostgreSQL 13
 * @param lagBytes the server's current WAL position minus the slot's confirmed position (-1 when
 *     the slot is missing)
 * @param lagAge how long the slot has been behind (zero when it holds no WAL back): since the
 *     commit of the oldest transaction its relay streamed and has not confirmed, or since its
 *     relay's last lease renewal, so it keeps growing while no relay runs
 * @param safeWalSizeBytes WAL that can still be written before the slot is invalidated under {@code
 *     max_slot_wal_keep_size}; empty when unbounded (or missing)
 * @param recoveries times the relay found the slot lost and recovered it
 */
public record CdcSlotState(
    String slot,
    boolean present,
    boolean active,
    Optional<String> walStatus,
    long lagBytes,
    Duration lagAge,
    Optional<Long> safeWalSizeBytes,
    long recoveries) {

  /** Whether the slot is dropped or invalidated: its relay must recover it. */
  public boolean lost() {
    return !present || walStatus.filter("lost"::equals).isPresent();
  }
}
