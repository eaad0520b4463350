package dev.postbox.jdbc.cdc.internal;

import dev.postbox.jdbc.OutboxException;
import dev.postbox.jdbc.internal.PendingRows;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGProperty;
import org.postgresql.replication.LogSequenceNumber;
import org.postgresql.replication.PGReplicationStream;
import org.postgresql.replication.fluent.logical.ChainedLogicalStreamBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prepares and opens the CDC relay's replication: checks the server ({@code wal_level=logical}, a
 * role with {@code REPLICATION}, the outbox table), creates the publication (inserts of the outbox
 * table only) and the logical slot ({@code pgoutput}) when missing, and opens replication
 * connections and streams on the slot. Thread-safe.
 */
public final class ReplicationSetup {

  private static final Logger log = LoggerFactory.getLogger(ReplicationSetup.class);

  /** The SQLSTATE of {@code replication slot "x" is active for PID n} (object_in_use). */
  public static final String SLOT_IN_USE = "55006";

  private static final String DUPLICATE_OBJECT = "42710";

  private final DataSource dataSource;
  private final String replicationUrl;
  private final Properties replicationProperties;
  private final String schema;
  private final String slot;
  private final String publication;
  private final Duration statusInterval;
  private volatile boolean logicalMessages;
  private volatile boolean binaryValues;
  private volatile boolean failoverSlot;
  private final java.util.List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();

  public ReplicationSetup(
      DataSource dataSource,
      String replicationUrl,
      Properties replicationProperties,
      String schema,
      String slot,
      String publication,
      Duration statusInterval) {
    this.dataSource = dataSource;
    this.replicationUrl = replicationUrl;
    this.replicationProperties = replicationProperties;
    this.schema = schema;
    this.slot = slot;
    this.publication = publication;
    this.statusInterval = statusInterval;
  }

  /** Streams the transactional logical messages too (PostgreSQL 14+; {@code EmitMessageOutbox}). */
  public ReplicationSetup withLogicalMessages(boolean on) {
    this.logicalMessages = on;
    return this;
  }

  /**
   * Asks the server for column values in binary form ({@code binary 'true'}) where it can send them
   * (PostgreSQL 14+; older servers stream text).
   */
  public ReplicationSetup withBinaryValues(boolean on) {
    this.binaryValues = on;
    return this;
  }

  /**
   * Creates the slot with {@code failover => true} (PostgreSQL 17+), so that a standby with {@code
   * sync_replication_slots = on} synchronises it.
   */
  public ReplicationSetup withFailoverSlot(boolean on) {
    this.failoverSlot = on;
    return this;
  }

  /** The slot-creating query: an ordinary or a failover slot. */
  private String createSlotSql() {
    return failoverSlot
        ? "SELECT lsn::text FROM pg_create_logical_replication_slot(?, 'pgoutput', false, false,"
            + " true)"
        : "SELECT lsn::text FROM pg_create_logical_replication_slot(?, 'pgoutput')";
  }

  /**
   * With a failover slot: warns when the slot is not a failover slot, or when no standby is named
   * in {@code synchronized_standby_slots} (logical decoding then runs ahead of the standby, and a
   * failover may find the synchronised slot missing or behind what was confirmed).
   */
  private void checkFailoverSetup(Connection c) throws SQLException {
    if (!failoverSlot) {
      return;
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT failover, current_setting('synchronized_standby_slots', true)"
                + " FROM pg_replication_slots WHERE slot_name = ?")) {
      ps.setString(1, slot);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return;
        }
        if (!rs.getBoolean(1)) {
          warn(
              "replication slot "
                  + slot
                  + " exists but is not a failover slot: a failover loses it (drop it, or"
                  + " ALTER_REPLICATION_SLOT "
                  + slot
                  + " (FAILOVER true) over a replication connection)");
        }
        String standbys = rs.getString(2);
        if (standbys == null || standbys.isBlank()) {
          warn(
              "failoverSlot is set but synchronized_standby_slots is empty on this server: no"
                  + " standby is known to synchronise slot "
                  + slot
                  + ", and a failover may lose it (see docs/guides/cdc.md)");
        }
      }
    }
  }

  private void warn(String warning) {
    warnings.add(warning);
    log.warn(warning);
  }

  /** The data source's current schema, where the outbox table is. */
  public static String currentSchema(DataSource dataSource) {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_schema()")) {
      rs.next();
      String schema = rs.getString(1);
      if (schema == null) {
        throw new OutboxException("the data source has no current schema (search_path)", null);
      }
      return schema;
    } catch (SQLException e) {
      throw new OutboxException("cannot read the data source's current schema", e);
    }
  }

  /**
   * Checks the server and creates the publication and the slot if missing. Fails with an {@link
   * OutboxException} that says what to change.
   */
  public void prepare() {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      String walLevel = show(c, "wal_level");
      if (!"logical".equals(walLevel)) {
        throw new OutboxException(
            "wal_level is "
                + walLevel
                + "; the CDC relay needs wal_level = logical (set it in postgresql.conf or with"
                + " ALTER SYSTEM, then restart PostgreSQL)",
            null);
      }
      try (Statement s = c.createStatement();
          ResultSet rs =
              s.executeQuery(
                  "SELECT current_user, rolreplication OR rolsuper FROM pg_roles"
                      + " WHERE rolname = current_user")) {
        rs.next();
        if (!rs.getBoolean(2)) {
          throw new OutboxException(
              "role "
                  + rs.getString(1)
                  + " lacks the REPLICATION attribute the CDC relay's slot needs: ALTER ROLE "
                  + rs.getString(1)
                  + " REPLICATION",
              null);
        }
      }
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT to_regclass('postbox_outbox') IS NOT NULL")) {
        rs.next();
        if (!rs.getBoolean(1)) {
          throw new OutboxException(
              "postbox_outbox is missing in schema "
                  + schema
                  + "; run PostboxMigrations.migrate first",
              null);
        }
      }
      // wal_status and max_slot_wal_keep_size arrived in PostgreSQL 13
      boolean walCap = c.getMetaData().getDatabaseMajorVersion() >= 13;
      preparePublication(c);
      prepareSlot(c, walCap);
      checkFailoverSetup(c);
      if (walCap && "-1".equals(show(c, "max_slot_wal_keep_size"))) {
        String warning =
            "max_slot_wal_keep_size is unbounded (-1): while the CDC relay's slot "
                + slot
                + " is not consumed (every relay stopped, or one stuck), PostgreSQL keeps all WAL"
                + " since its position and the disk can fill up; set a cap, e.g. ALTER SYSTEM SET"
                + " max_slot_wal_keep_size = '10GB' (see docs/relay.md, CDC relay)";
        warnings.add(warning);
        log.warn(warning);
      }
    } catch (SQLException e) {
      throw new OutboxException("preparing the CDC relay's publication and slot failed", e);
    }
  }

  private void preparePublication(Connection c) throws SQLException {
    if (!exists(c, "SELECT 1 FROM pg_publication WHERE pubname = ?", publication)) {
      try (Statement s = c.createStatement()) {
        s.execute(
            "CREATE PUBLICATION "
                + publication
                + " FOR TABLE "
                + quote(schema)
                + ".postbox_outbox WITH (publish = 'insert')");
        log.info("created publication {} on {}.postbox_outbox", publication, schema);
      } catch (SQLException e) {
        if (!DUPLICATE_OBJECT.equals(e.getSQLState())) {
          throw e;
        }
      }
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT 1 FROM pg_publication_tables WHERE pubname = ? AND schemaname = ?"
                + " AND tablename = 'postbox_outbox'")) {
      ps.setString(1, publication);
      ps.setString(2, schema);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          throw new OutboxException(
              "publication "
                  + publication
                  + " exists but does not publish "
                  + schema
                  + ".postbox_outbox; choose another publicationName or ALTER PUBLICATION "
                  + publication
                  + " ADD TABLE "
                  + schema
                  + ".postbox_outbox",
              null);
        }
      }
    }
  }

  private void prepareSlot(Connection c, boolean walStatus) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT plugin, database = current_database(), "
                + (walStatus ? "wal_status" : "NULL")
                + " FROM pg_replication_slots WHERE slot_name = ?")) {
      ps.setString(1, slot);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          if (!"pgoutput".equals(rs.getString(1)) || !rs.getBoolean(2)) {
            throw new OutboxException(
                "replication slot "
                    + slot
                    + " exists but is not a pgoutput slot of this database; choose another slotName",
                null);
          }
          if ("lost".equals(rs.getString(3))) {
            log.error(
                "replication slot {} was invalidated (its WAL was removed, max_slot_wal_keep_size):"
                    + " the relay recovers it (creates it again and republishes the outbox's"
                    + " pending rows)",
                slot);
          }
          return;
        }
      }
    }
    if (hadSlotBefore(c)) {
      log.error(
          "replication slot {} is missing although a CDC relay streamed it before (dropped): the"
              + " relay recovers it (creates it again and republishes the outbox's pending rows)",
          slot);
      return; // the streamer recovers it, with the republication
    }
    long pending = 0;
    try (Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery("SELECT count(*) FROM postbox_outbox WHERE " + PendingRows.CONDITION)) {
      rs.next();
      pending = rs.getLong(1);
    }
    try (PreparedStatement ps = c.prepareStatement(createSlotSql())) {
      ps.setString(1, slot);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        log.info("created logical replication slot {} (pgoutput) at {}", slot, rs.getString(1));
      }
    } catch (SQLException e) {
      if (!DUPLICATE_OBJECT.equals(e.getSQLState())) {
        throw e;
      }
      return; // another instance created it meanwhile
    }
    if (pending > 0) {
      log.warn(
          "{} outbox rows were pending when slot {} was created; the CDC relay streams only rows"
              + " committed after that: publish them with the polling relay (see docs/relay.md)",
          pending,
          slot);
    }
  }

  /** Whether the slot's lease row says a relay held it before (so a missing slot was dropped). */
  private boolean hadSlotBefore(Connection c) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT to_regclass('postbox_cdc_slot') IS NOT NULL AND EXISTS (SELECT 1 FROM"
                + " postbox_cdc_slot WHERE slot_name = ? AND epoch > 0)")) {
      ps.setString(1, slot);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getBoolean(1);
      }
    } catch (SQLException e) {
      return false; // postbox_cdc_slot missing: the migrations check says so later
    }
  }

  /**
   * Why the slot cannot be streamed, if it is lost: {@code dropped} (missing) or {@code
   * invalidated} ({@code wal_status = lost}); empty when it is fine.
   */
  public java.util.Optional<String> lostReason() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      boolean pg13 = c.getMetaData().getDatabaseMajorVersion() >= 13;
      try (PreparedStatement ps =
          c.prepareStatement(
              "SELECT "
                  + (pg13 ? "wal_status" : "NULL")
                  + " FROM pg_replication_slots WHERE slot_name = ?")) {
        ps.setString(1, slot);
        try (ResultSet rs = ps.executeQuery()) {
          if (!rs.next()) {
            return java.util.Optional.of("dropped");
          }
          if ("lost".equals(rs.getString(1))) {
            return java.util.Optional.of(
                "invalidated (its WAL was removed under max_slot_wal_keep_size)");
          }
          return java.util.Optional.empty();
        }
      }
    }
  }

  /**
   * Drops the slot if it exists (ending a walsender that still holds it) and creates it again;
   * returns the new slot's start position.
   */
  public String recreateSlot() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      try (PreparedStatement ps =
          c.prepareStatement(
              "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots"
                  + " WHERE slot_name = ? AND active_pid IS NOT NULL")) {
        ps.setString(1, slot);
        ps.execute();
      }
      try (PreparedStatement ps =
          c.prepareStatement(
              "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                  + " WHERE slot_name = ?")) {
        ps.setString(1, slot);
        ps.execute();
      }
      try (PreparedStatement ps = c.prepareStatement(createSlotSql())) {
        ps.setString(1, slot);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getString(1);
        }
      }
    }
  }

  /** The configured {@code max_slot_wal_keep_size} ({@code -1}: unbounded; empty before 13). */
  public java.util.Optional<String> walKeepSize() {
    try (Connection c = dataSource.getConnection()) {
      if (c.getMetaData().getDatabaseMajorVersion() < 13) {
        return java.util.Optional.empty();
      }
      return java.util.Optional.of(show(c, "max_slot_wal_keep_size"));
    } catch (SQLException e) {
      return java.util.Optional.empty();
    }
  }

  /** Warnings of the last {@link #prepare()} (an unbounded WAL cap). */
  public java.util.List<String> warnings() {
    return java.util.List.copyOf(warnings);
  }

  /** A new replication connection ({@code replication=database}, simple query mode). */
  public Connection openReplicationConnection() throws SQLException {
    Properties p = new Properties();
    p.putAll(replicationProperties);
    PGProperty.ASSUME_MIN_SERVER_VERSION.set(p, "10");
    PGProperty.REPLICATION.set(p, "database");
    PGProperty.PREFER_QUERY_MODE.set(p, "simple");
    return DriverManager.getConnection(replicationUrl, p);
  }

  /**
   * Starts streaming the slot on {@code c}, from {@code startLsn} if positive (the end of the last
   * transaction this process holds) or from the slot's confirmed position. Throws an {@link
   * SQLException} with SQLSTATE {@value #SLOT_IN_USE} while another connection streams the slot.
   */
  public PGReplicationStream startStream(Connection c, long startLsn) throws SQLException {
    return startStream(c, startLsn, false);
  }

  /** As {@link #startStream(Connection, long)}; {@code messages}: with logical messages (14+). */
  public PGReplicationStream startStream(Connection c, long startLsn, boolean messages)
      throws SQLException {
    ChainedLogicalStreamBuilder b =
        c.unwrap(PGConnection.class)
            .getReplicationAPI()
            .replicationStream()
            .logical()
            .withSlotName(slot)
            .withSlotOption("proto_version", "1")
            .withSlotOption("publication_names", publication)
            .withStatusInterval(
                (int) statusInterval.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    if (messages || logicalMessages) {
      b = b.withSlotOption("messages", "true");
    }
    if (binaryValues && c.getMetaData().getDatabaseMajorVersion() >= 14) {
      b = b.withSlotOption("binary", "true");
    }
    if (startLsn > 0) {
      b = b.withStartPosition(LogSequenceNumber.valueOf(startLsn));
    }
    return b.start();
  }

  /** The slot's confirmed position, or 0 if unknown. */
  public long confirmedFlush() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = ?")) {
      ps.setString(1, slot);
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next() && rs.getString(1) != null) {
          return LogSequenceNumber.valueOf(rs.getString(1)).asLong();
        }
        return 0;
      }
    } catch (SQLException e) {
      return 0;
    }
  }

  private static String show(Connection c, String setting) throws SQLException {
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }

  private static boolean exists(Connection c, String sql, String arg) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      ps.setString(1, arg);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next();
      }
    }
  }

  private static String quote(String identifier) {
    return "\"" + identifier.replace("\"", "\"\"") + "\"";
  }
}
