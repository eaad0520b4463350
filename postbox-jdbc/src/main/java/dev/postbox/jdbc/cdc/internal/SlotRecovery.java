package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.time.Sleeper;
import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.internal.PendingRowReader;
import dev.postbox.jdbc.internal.PendingRows;
import dev.postbox.jdbc.internal.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Recovers a lost slot (dropped, or invalidated under {@code max_slot_wal_keep_size}): rows
 * committed after its confirmed position may never have been streamed, and the WAL that held them
 * is gone. The outbox table still holds them as pending rows, so:
 *
 * <ol>
 *   <li>record the recovery in the slot's lease row ({@code republish_from_table}, fenced by the
 *       epoch), so a crash anywhere below resumes it in the next owner;
 *   <li>create the slot again (dropping what is left of it): from here on the new slot streams
 *       every commit;
 *   <li>publish the table's pending rows in position order (per key, commit order) through the
 *       relay's queue, and wait until every one of them is marked;
 *   <li>clear the flag; the caller then streams the new slot.
 * </ol>
 *
 * Rows committed around the new slot's creation may come both from the table and from the slot:
 * duplicates with the same ids, after their earlier rows, never loss. Runs on the streaming thread.
 */
final class SlotRecovery {

  private static final Logger log = LoggerFactory.getLogger(SlotRecovery.class);
  private static final int PAGE = 2_000;

  private static final String BEGIN =
      "UPDATE postbox_cdc_slot SET republish_from_table = true, slot_recreated_at = now(),"
          + " slot_recoveries = slot_recoveries + ? WHERE slot_name = ? AND owner = ? AND epoch = ?";
  private static final String END =
      "UPDATE postbox_cdc_slot SET republish_from_table = false"
          + " WHERE slot_name = ? AND owner = ? AND epoch = ?";
  private static final String STILL_PENDING =
      "SELECT count(*) FROM postbox_outbox WHERE position = ANY(?::bigint[]) AND "
          + PendingRows.CONDITION;

  private final String name;
  private final DataSource dataSource;
  private final ReplicationSetup setup;
  private final SlotLease lease;
  private final String slot;
  private final Sleeper sleeper;
  final AtomicLong recoveries = new AtomicLong();
  final AtomicLong republished = new AtomicLong();

  SlotRecovery(
      String name,
      DataSource dataSource,
      ReplicationSetup setup,
      SlotLease lease,
      String slot,
      Sleeper sleeper) {
    this.name = name;
    this.dataSource = dataSource;
    this.setup = setup;
    this.lease = lease;
    this.slot = slot;
    this.sleeper = sleeper;
  }

  /**
   * Marks the recovery in the lease row ({@code counted}: a new loss, not a resumed recovery) and
   * creates the slot again.
   */
  void recreate(long epoch, String reason, boolean counted) throws SQLException {
    if (counted) {
      log.error(
          "CDC relay {}: replication slot {} was {}: rows committed since its confirmed position"
              + " were never streamed. Recovering: creating the slot again, then publishing the"
              + " outbox's pending rows in position order before streaming it (duplicates"
              + " possible, no loss); see docs/relay.md, CDC relay, recovery",
          name,
          slot,
          reason);
      recoveries.incrementAndGet();
    }
    Transactions.inTransaction(
        dataSource,
        "recording the recovery of slot " + slot + " failed",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(BEGIN)) {
            ps.setInt(1, counted ? 1 : 0);
            ps.setString(2, slot);
            ps.setString(3, name);
            ps.setLong(4, epoch);
            if (ps.executeUpdate() != 1) {
              throw new SlotLease.StaleLeaseException(slot, epoch);
            }
          }
          return null;
        },
        OutboxException::new);
    String at = setup.recreateSlot();
    log.warn("CDC relay {}: created slot {} again at {}", name, slot, at);
  }

  /**
   * Publishes the table's pending rows through {@code queue} as events of {@code epoch} and waits
   * until each is marked; then clears the recovery flag. Returns false if the lease was lost or the
   * relay stops meanwhile (the flag stays: the next owner does it again).
   */
  boolean republish(long epoch, BlockingQueue<CdcEvent> queue, BooleanSupplier going)
      throws SQLException, InterruptedException {
    List<Long[]> pages = new ArrayList<>();
    long after = Long.MIN_VALUE;
    int index = 0;
    long count = 0;
    while (true) {
      List<OutboxRecord> rows;
      try (Connection c = dataSource.getConnection()) {
        rows = PendingRowReader.page(c, after, PAGE);
      }
      if (rows.isEmpty()) {
        break;
      }
      Long[] positions = new Long[rows.size()];
      for (int i = 0; i < rows.size(); i++) {
        OutboxRecord r = rows.get(i);
        positions[i] = r.position();
        CdcEvent e = new CdcEvent(epoch, -1, index++, r);
        while (!queue.offer(e, 20, TimeUnit.MILLISECONDS)) {
          if (!going.getAsBoolean() || !lease.holds(epoch)) {
            return false;
          }
        }
      }
      pages.add(positions);
      count += rows.size();
      after = rows.get(rows.size() - 1).position();
    }
    log.warn("CDC relay {}: republishing {} pending outbox rows of slot {}", name, count, slot);
    for (Long[] page : pages) {
      while (stillPending(page) > 0) {
        if (!going.getAsBoolean() || !lease.holds(epoch)) {
          return false;
        }
        sleeper.sleep(Duration.ofMillis(20));
      }
    }
    republished.addAndGet(count);
    Transactions.inTransaction(
        dataSource,
        "ending the recovery of slot " + slot + " failed",
        c -> {
          try (PreparedStatement ps = c.prepareStatement(END)) {
            ps.setString(1, slot);
            ps.setString(2, name);
            ps.setLong(3, epoch);
            ps.executeUpdate();
          }
          return null;
        },
        OutboxException::new);
    log.warn(
        "CDC relay {}: slot {} recovered: {} pending rows republished; streaming the new slot",
        name,
        slot,
        count);
    return true;
  }

  private long stillPending(Long[] positions) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement(STILL_PENDING)) {
      ps.setArray(1, c.createArrayOf("int8", positions));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
