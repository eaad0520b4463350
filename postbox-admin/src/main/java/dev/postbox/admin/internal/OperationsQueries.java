package dev.postbox.admin.internal;

import dev.postbox.admin.FailedOutboxRow;
import dev.postbox.admin.LagReport;
import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import dev.postbox.admin.ParkedKey;
import dev.postbox.admin.RelayStatus;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/** Parked keys, failed outbox rows, relays and per-consumer backlogs, from the tables. */
public final class OperationsQueries {

  /** A blocked key's head is due at this time: never, until an operator acts (ParkingDrainer). */
  private static final java.time.Instant NEVER = java.time.Instant.parse("9999-01-01T00:00:00Z");

  // the pending condition of postbox-jdbc's PendingRows (internal there), covered by V1's index
  private static final String PENDING = "published_at IS NULL AND failed_at IS NULL";

  private final DataSource dataSource;

  public OperationsQueries(DataSource dataSource) {
    this.dataSource = dataSource;
  }

  /** Parked keys (of one consumer, or all), by consumer and key. */
  public Page<ParkedKey> parkedKeys(Optional<String> consumer, PageRequest page) {
    Statement heads =
        new Statement(
                "SELECT h.*, c.n, c.parked_since FROM (SELECT DISTINCT ON (consumer, msg_key)"
                    + " consumer, msg_key, topic, partition, \"offset\", attempts, due_at,"
                    + " due_at <= now() AS due, leased_until IS NOT NULL AND leased_until > now() AS leased, last_error"
                    + " FROM postbox_parked")
            .where("consumer = ?", consumer);
    if (page.after().isPresent()) {
      String[] k = Cursors.decodeText(page.after().get());
      heads.where("(consumer, msg_key) > (?, ?)", k[0], k[1]);
    }
    heads.then(
        " ORDER BY consumer, msg_key, id) h CROSS JOIN LATERAL (SELECT count(*) AS n,"
            + " min(parked_at) AS parked_since FROM postbox_parked p"
            + " WHERE p.consumer = h.consumer AND p.msg_key = h.msg_key) c"
            + " ORDER BY h.consumer, h.msg_key LIMIT ?",
        page.limit() + 1);
    List<ParkedKey> rows =
        heads.list(
            dataSource,
            "parked keys",
            rs ->
                new ParkedKey(
                    rs.getString("consumer"),
                    rs.getString("msg_key"),
                    rs.getLong("n"),
                    rs.getString("topic"),
                    rs.getInt("partition"),
                    rs.getLong("offset"),
                    rs.getInt("attempts"),
                    Statement.instant(rs, "due_at"),
                    rs.getBoolean("due"),
                    !Statement.instant(rs, "due_at").isBefore(NEVER),
                    rs.getBoolean("leased"),
                    Optional.ofNullable(rs.getString("last_error")),
                    Statement.instant(rs, "parked_since")));
    return DeadLetterQueries.page(rows, page, p -> Cursors.encodeText(p.consumer(), p.key()));
  }

  /** Outbox rows the relay gave up on, newest position first. */
  public Page<FailedOutboxRow> failedOutboxRows(PageRequest page) {
    Statement s =
        new Statement(
                "SELECT position, message_id, topic, msg_key, type, failed_at, attempts, last_error,"
                    + " hold FROM postbox_outbox")
            .where("failed_at IS NOT NULL");
    if (page.after().isPresent()) {
      s.where("position < ?", Cursors.decodeLong(page.after().get()));
    }
    s.then(" ORDER BY position DESC LIMIT ?", page.limit() + 1);
    List<FailedOutboxRow> rows =
        s.list(
            dataSource,
            "failed outbox rows",
            rs ->
                new FailedOutboxRow(
                    rs.getLong("position"),
                    rs.getObject("message_id", UUID.class),
                    rs.getString("topic"),
                    Optional.ofNullable(rs.getString("msg_key")),
                    rs.getString("type"),
                    Statement.instant(rs, "failed_at"),
                    rs.getInt("attempts"),
                    Optional.ofNullable(rs.getString("last_error")),
                    Optional.ofNullable(rs.getString("hold"))));
    return DeadLetterQueries.page(rows, page, r -> Cursors.encodeLong(r.position()));
  }

  /** Relay instances and lanes. */
  public RelayStatus relays() {
    List<RelayStatus.Instance> instances =
        new Statement(
                "SELECT instance_id, started_at, seen_at,"
                    + " extract(epoch FROM clock_timestamp() - seen_at) AS since, idle"
                    + " FROM postbox_relay_instance ORDER BY instance_id")
            .list(
                dataSource,
                "relay instances",
                rs ->
                    new RelayStatus.Instance(
                        rs.getString("instance_id"),
                        Statement.instant(rs, "started_at"),
                        Statement.instant(rs, "seen_at"),
                        Statement.seconds(rs.getDouble("since")),
                        rs.getBoolean("idle")));
    List<RelayStatus.Lane> lanes =
        new Statement(
                "SELECT l.lane, l.owner, l.epoch, l.lease_until, l.lease_until > now() AS leased,"
                    + " coalesce(p.n, 0) AS pending,"
                    + " coalesce(extract(epoch FROM clock_timestamp() - p.oldest), 0) AS age"
                    + " FROM postbox_relay_lane l LEFT JOIN (SELECT lane, count(*) AS n,"
                    + " min(created_at) AS oldest FROM postbox_outbox WHERE "
                    + PENDING
                    + " GROUP BY lane) p ON p.lane = l.lane ORDER BY l.lane")
            .list(
                dataSource,
                "relay lanes",
                rs ->
                    new RelayStatus.Lane(
                        rs.getInt("lane"),
                        Optional.ofNullable(rs.getString("owner")),
                        rs.getLong("epoch"),
                        leaseUntil(rs),
                        rs.getBoolean("leased"),
                        rs.getLong("pending"),
                        Statement.seconds(rs.getDouble("age"))));
    return new RelayStatus(instances, lanes);
  }

  private static java.time.Instant leaseUntil(java.sql.ResultSet rs) throws java.sql.SQLException {
    // '-infinity' (never leased) reads as a far-past timestamp or null depending on the driver
    java.time.Instant at = Statement.instant(rs, "lease_until");
    return at == null ? java.time.Instant.EPOCH : at;
  }

  /** What waits on an operator, per consumer. */
  public List<LagReport.Backlog> backlogs() {
    return new Statement(
            "SELECT coalesce(d.consumer, p.consumer) AS consumer, coalesce(d.n, 0) AS letters,"
                + " coalesce(extract(epoch FROM clock_timestamp() - d.oldest), 0) AS letter_age,"
                + " coalesce(p.keys, 0) AS keys, coalesce(p.n, 0) AS parked,"
                + " coalesce(extract(epoch FROM clock_timestamp() - p.oldest), 0) AS parked_age"
                + " FROM (SELECT consumer, count(*) AS n, min(first_failure) AS oldest"
                + "   FROM postbox_dead_letter WHERE status = 'PENDING' GROUP BY consumer) d"
                + " FULL JOIN (SELECT consumer, count(DISTINCT msg_key) AS keys, count(*) AS n,"
                + "   min(parked_at) AS oldest FROM postbox_parked GROUP BY consumer) p"
                + " ON p.consumer = d.consumer ORDER BY 1")
        .list(
            dataSource,
            "consumer backlogs",
            rs ->
                new LagReport.Backlog(
                    rs.getString("consumer"),
                    rs.getLong("letters"),
                    Statement.seconds(rs.getDouble("letter_age")),
                    rs.getLong("keys"),
                    rs.getLong("parked"),
                    Statement.seconds(rs.getDouble("parked_age"))));
  }
}
