package dev.postbox.jdbc.cdc;

import dev.postbox.core.Backoff;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.jdbc.cdc.internal.CdcEngine;
import dev.postbox.jdbc.cdc.internal.ReplicationSetup;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Objects;
import java.util.Properties;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Publishes outbox rows as PostgreSQL's logical replication streams their inserts: the CDC
 * alternative to the polling {@link dev.postbox.core.relay.Relay}, through the same {@link
 * RelayPublisher}.
 *
 * <p><b>How.</b> A publication holds the inserts of the schema's {@code postbox_outbox}; a logical
 * replication slot with the built-in {@code pgoutput} plugin (no server extension) streams them,
 * transaction by transaction, in commit order. Both are created at {@link #start()} when missing
 * (the role needs {@code REPLICATION}, the server {@code wal_level = logical}; {@code start()}
 * fails with a message saying which is missing). The relay decodes each insert into the same
 * envelope the polling relay reads, publishes the rows in stream order, and marks them published
 * (or deletes them, with a zero retention) in batches on a thread of their own, so the polling
 * relay's pending condition no longer sees them.
 *
 * <p><b>Guarantees.</b> Per key (in fact across keys) the broker receives rows in commit order: the
 * WAL's order, so no advisory key lock is needed for it. A rolled-back transaction is never
 * streamed. The slot is confirmed only up to the end of the last transaction whose every row the
 * broker acknowledged and the outbox marked; progress is tracked as (commit LSN, index within the
 * transaction), so a transaction done only in part is never confirmed. After a crash the next
 * instance streams again everything after the confirmed position: at most the unconfirmed tail, in
 * order, with the same message ids (duplicates, never loss). A row the broker can never take is
 * marked failed and skipped.
 *
 * <p><b>One active instance per slot, fenced.</b> Start the same relay (same slot) on several
 * machines: the one holding the slot's lease ({@code postbox_cdc_slot}, renewed every quarter of
 * the {@link Builder#leaseTtl lease TTL}) streams, the others stand by and try to take the lease
 * every {@link Builder#standbyRetryInterval standby interval}. A standby takes over when the holder
 * stops cleanly (at once), crashes, or is paused past its lease (after the TTL): it bumps the
 * lease's epoch, ends the ex-owner's walsender (so a paused ex-owner's connection, which PostgreSQL
 * would keep until {@code wal_sender_timeout}, can confirm nothing) and streams from the slot's
 * confirmed position. A resumed ex-owner finds its lease expired by its own clock before a
 * successor can have taken it: it sends no new batch, settles no acknowledgement, its marks are
 * fenced by the epoch, and it stands by. (A batch it had already handed to the broker when it was
 * paused is delivered when it resumes: those records are older than the successor's position and
 * come again from the successor; consumers' deduplication absorbs them.) Run either this relay or
 * the polling relay on an outbox, not both.
 *
 * <p><b>Defaults.</b> slot and publication {@code postbox_cdc_<schema>}; batch size 2,000, up to 4
 * batches in flight; status to the server at least every 10 s; standby retry every 1 s; lease TTL
 * 10 s; retention of published rows 1 h (zero deletes them), purged every 30 s; backoff 100 ms
 * doubling to 30 s, 50 % jitter; shutdown waits up to 30 s. Thread-safe.
 */
public final class CdcRelay implements AutoCloseable {

  private final CdcEngine engine;
  private final RelayPublisher publisher;
  private final String instanceId;
  private final String slotName;
  private final String publicationName;

  private CdcRelay(CdcEngine.Config config, RelayPublisher publisher) {
    this.engine = new CdcEngine(config, publisher);
    this.publisher = publisher;
    this.instanceId = config.instanceId();
    this.slotName = config.slotName();
    this.publicationName = config.publicationName();
  }

  /**
   * A builder for a relay that reads the outbox through {@code dataSource} (its current schema) and
   * streams it over a replication connection to {@code replicationUrl} (a pgjdbc URL of the same
   * database, with the user, and the password unless given in {@link
   * Builder#replicationProperties}), publishing through {@code publisher}.
   */
  public static Builder builder(
      DataSource dataSource, String replicationUrl, RelayPublisher publisher) {
    return new Builder(dataSource, replicationUrl, publisher);
  }

  /**
   * Creates the publication and the slot if missing, then starts streaming (or standing by). Fails
   * with an {@link dev.postbox.jdbc.OutboxException} when the server or the role cannot do logical
   * replication, and with the publisher's exception when the broker refuses its credentials ({@link
   * RelayPublisher#checkAccess()}). May be called once.
   */
  public void start() {
    publisher.checkAccess();
    engine.start();
  }

  /**
   * Stops reading, waits (up to the shutdown timeout) for the batch in flight to be acknowledged
   * and marked, confirms it to the slot, lets go of the slot and closes the publisher. Idempotent.
   */
  @Override
  public void close() {
    engine.close();
  }

  /** Whether this instance streams the slot now (false while it stands by or reconnects). */
  public boolean active() {
    return engine.active();
  }

  /**
   * What the start-up checks warned about (logged at WARN too): today an unbounded {@code
   * max_slot_wal_keep_size}, under which a slot nobody consumes keeps WAL until the disk is full.
   */
  public java.util.List<String> startupWarnings() {
    return engine.startupWarnings();
  }

  /** The slot lease's epoch this instance streams under (0 while it stands by). */
  public long leaseEpoch() {
    return engine.leaseEpoch();
  }

  /** The last slot position this instance confirmed ({@code X/Y}; {@code 0/0} if none yet). */
  public String confirmedLsn() {
    return engine.confirmedLsn();
  }

  /** This instance's id (in its thread names and logs). */
  public String instanceId() {
    return instanceId;
  }

  /** The replication slot streamed. */
  public String slotName() {
    return slotName;
  }

  /** The publication streamed. */
  public String publicationName() {
    return publicationName;
  }

  /** Counters since start. */
  public Stats stats() {
    CdcEngine.Counters c = engine.counters();
    return new Stats(
        c.published(),
        c.publishFailures(),
        c.unpublishable(),
        c.marked(),
        c.batches(),
        c.dropped(),
        c.slotRecoveries(),
        c.republishedFromTable());
  }

  /**
   * Counters of one CDC relay instance.
   *
   * @param published rows the broker acknowledged
   * @param publishFailures rows not acknowledged by an attempt (each counted once per attempt)
   * @param unpublishable rows marked failed and skipped (unreadable, or refused for good)
   * @param marked rows marked published (or deleted)
   * @param batches publish attempts
   * @param dropped streamed rows dropped unpublished or unsettled because the slot lease was lost
   *     (the successor publishes them)
   * @param slotRecoveries times this instance found the slot lost (dropped or invalidated) and
   *     recovered it
   * @param republishedFromTable pending rows republished from the outbox table by those recoveries
   */
  public record Stats(
      long published,
      long publishFailures,
      long unpublishable,
      long marked,
      long batches,
      long dropped,
      long slotRecoveries,
      long republishedFromTable) {}

  /** Default for {@link Builder#batchSize(int)}. */
  public static final int DEFAULT_BATCH_SIZE = 2_000;

  /** Default for {@link Builder#maxInFlightBatches(int)}. */
  public static final int DEFAULT_MAX_IN_FLIGHT_BATCHES = 4;

  /** Default for {@link Builder#batchLinger(Duration)}. */
  public static final Duration DEFAULT_BATCH_LINGER = Duration.ZERO;

  /** Default for {@link Builder#binaryValues(boolean)}: binary where the server can (14+). */
  public static final boolean DEFAULT_BINARY_VALUES = true;

  /** Default for {@link Builder#logicalMessages(boolean)}: only outbox rows. */
  public static final boolean DEFAULT_LOGICAL_MESSAGES = false;

  /** Default for {@link Builder#failoverSlot(boolean)}: an ordinary slot. */
  public static final boolean DEFAULT_FAILOVER_SLOT = false;

  /** Default for {@link Builder#messagePrefix(String)}. */
  public static final String DEFAULT_MESSAGE_PREFIX = EmitMessageOutbox.DEFAULT_PREFIX;

  /** Default for {@link Builder#statusInterval(Duration)}. */
  public static final Duration DEFAULT_STATUS_INTERVAL = Duration.ofSeconds(10);

  /** Default for {@link Builder#standbyRetryInterval(Duration)}. */
  public static final Duration DEFAULT_STANDBY_RETRY_INTERVAL = Duration.ofSeconds(1);

  /** Default for {@link Builder#leaseTtl(Duration)}. */
  public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(10);

  /** Default for {@link Builder#retention(Duration)}. */
  public static final Duration DEFAULT_RETENTION = Duration.ofHours(1);

  /** Default for {@link Builder#purgeInterval(Duration)}. */
  public static final Duration DEFAULT_PURGE_INTERVAL = Duration.ofSeconds(30);

  /** Default for {@link Builder#shutdownTimeout(Duration)}. */
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);

  /** Default for {@link Builder#backoff(Backoff)}: 100 ms doubling to 30 s, half jitter. */
  public static final Backoff DEFAULT_BACKOFF =
      new Backoff(Duration.ofMillis(100), Duration.ofSeconds(30), 2, 0.5);

  /** Builds a {@link CdcRelay}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private static final Pattern NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

    private final DataSource dataSource;
    private final String replicationUrl;
    private final RelayPublisher publisher;
    private Properties replicationProperties = new Properties();
    private String instanceId;
    private String slotName;
    private String publicationName;
    private int batchSize = DEFAULT_BATCH_SIZE;
    private int maxInFlightBatches = DEFAULT_MAX_IN_FLIGHT_BATCHES;
    private Duration batchLinger = DEFAULT_BATCH_LINGER;
    private boolean binaryValues = DEFAULT_BINARY_VALUES;
    private boolean logicalMessages = DEFAULT_LOGICAL_MESSAGES;
    private boolean failoverSlot = DEFAULT_FAILOVER_SLOT;
    private String messagePrefix = DEFAULT_MESSAGE_PREFIX;
    private Duration statusInterval = DEFAULT_STATUS_INTERVAL;
    private Duration standbyRetryInterval = DEFAULT_STANDBY_RETRY_INTERVAL;
    private Duration leaseTtl = DEFAULT_LEASE_TTL;
    private Duration retention = DEFAULT_RETENTION;
    private Duration purgeInterval = DEFAULT_PURGE_INTERVAL;
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    private Backoff backoff = DEFAULT_BACKOFF;
    private Sleeper sleeper = Sleeper.SYSTEM;
    private Ticker ticker = Ticker.SYSTEM;

    private Builder(DataSource dataSource, String replicationUrl, RelayPublisher publisher) {
      this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
      this.replicationUrl = Objects.requireNonNull(replicationUrl, "replicationUrl");
      this.publisher = Objects.requireNonNull(publisher, "publisher");
    }

    /** Extra pgjdbc properties of the replication connection (a password, SSL settings). */
    public Builder replicationProperties(Properties properties) {
      this.replicationProperties = Objects.requireNonNull(properties, "properties");
      return this;
    }

    /** Sets this instance's id (default {@code <host>-<pid>-<random>}). */
    public Builder instanceId(String instanceId) {
      this.instanceId = instanceId;
      return this;
    }

    /**
     * Sets the replication slot (default {@code postbox_cdc_<schema>}; lower-case letters, digits
     * and {@code _}, at most 63). Every instance of one relay uses the same slot.
     */
    public Builder slotName(String slotName) {
      this.slotName = slotName;
      return this;
    }

    /** Sets the publication (default {@code postbox_cdc_<schema>}; same rules as the slot). */
    public Builder publicationName(String publicationName) {
      this.publicationName = publicationName;
      return this;
    }

    /** Sets the most rows published in one batch (default 2,000). */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /**
     * Sets how many batches may be in flight to the broker at once (default 4; 1 publishes one
     * batch at a time). Batches are settled in order, and the slot is confirmed only past events
     * whose every predecessor was acknowledged.
     */
    public Builder maxInFlightBatches(int maxInFlightBatches) {
      this.maxInFlightBatches = maxInFlightBatches;
      return this;
    }

    /**
     * Sets how long a batch that is not full waits, after its first row, for more rows to join it
     * while no batch is in flight (default zero: each batch is sent at once; at most 1 s). A linger
     * sends a trickle of small transactions in fewer, larger requests. Measured on a 2-core machine
     * shared by the writers, PostgreSQL and the broker (docs/benchmarks.md), 2 ms raised the median
     * commit-to-ack latency by 3-18 ms and lowered neither the relay's nor the broker's CPU per
     * event, hence the default.
     */
    public Builder batchLinger(Duration batchLinger) {
      this.batchLinger = batchLinger;
      return this;
    }

    /**
     * Whether the server sends the outbox rows' column values in binary form (default true; used on
     * PostgreSQL 14 and newer, older servers send text). Binary values spare the server's text
     * output functions and the relay's parsing: a timestamp is 8 bytes instead of a formatted date,
     * a payload its own bytes instead of hex. A column whose type has no binary form comes as text
     * either way. False asks for text everywhere, as before PostgreSQL 14; the bench races both
     * (docs/benchmarks.md).
     */
    public Builder binaryValues(boolean binaryValues) {
      this.binaryValues = binaryValues;
      return this;
    }

    /**
     * Also publishes the transactional logical messages an {@link EmitMessageOutbox} emits (default
     * false: outbox rows only). Needs PostgreSQL 14 or newer. Rows and messages of one transaction
     * go out in the order they were written.
     */
    public Builder logicalMessages(boolean logicalMessages) {
      this.logicalMessages = logicalMessages;
      return this;
    }

    /**
     * Creates the slot as a failover slot ({@code failover => true}, PostgreSQL 17+), which a
     * standby running with {@code sync_replication_slots = on} keeps a copy of, so that the relay
     * resumes from it on the standby after a promote (default false: an ordinary slot, which a
     * failover loses; the relay then creates it again and republishes the pending rows). The slot
     * is only synchronised when the standby is configured for it (see docs/guides/cdc.md); at
     * start-up the relay warns when the primary's {@code synchronized_standby_slots} is empty. A
     * slot that exists already is kept as it is (warned about when it is not a failover slot).
     */
    public Builder failoverSlot(boolean failoverSlot) {
      this.failoverSlot = failoverSlot;
      return this;
    }

    /** Sets the prefix of the logical messages published (default {@code postbox.outbox}). */
    public Builder messagePrefix(String messagePrefix) {
      this.messagePrefix = messagePrefix;
      return this;
    }

    /**
     * Sets the longest time between two status messages to the server (default 10 s; a new
     * confirmed position is sent at once). Keep it well below the server's {@code
     * wal_sender_timeout}.
     */
    public Builder statusInterval(Duration statusInterval) {
      this.statusInterval = statusInterval;
      return this;
    }

    /** Sets how often a standby tries to take the slot (default 1 s). */
    public Builder standbyRetryInterval(Duration standbyRetryInterval) {
      this.standbyRetryInterval = standbyRetryInterval;
      return this;
    }

    /**
     * Sets the slot lease's time to live (default 10 s): a standby takes over this long after the
     * active instance crashed or was paused; renewed every quarter of it.
     */
    public Builder leaseTtl(Duration leaseTtl) {
      this.leaseTtl = leaseTtl;
      return this;
    }

    /** Sets how long published rows are kept (default 1 h); zero deletes them once published. */
    public Builder retention(Duration retention) {
      this.retention = retention;
      return this;
    }

    /** Sets how often rows older than the retention are purged (default 30 s). */
    public Builder purgeInterval(Duration purgeInterval) {
      this.purgeInterval = purgeInterval;
      return this;
    }

    /** Sets how long {@link CdcRelay#close()} waits for each stage (default 30 s). */
    public Builder shutdownTimeout(Duration shutdownTimeout) {
      this.shutdownTimeout = shutdownTimeout;
      return this;
    }

    /** Sets the backoff after a failed publish, mark or connection (default 100 ms to 30 s). */
    public Builder backoff(Backoff backoff) {
      this.backoff = backoff;
      return this;
    }

    /** Sets how the relay waits (default {@link Sleeper#SYSTEM}). */
    public Builder sleeper(Sleeper sleeper) {
      this.sleeper = sleeper;
      return this;
    }

    /** Sets the monotonic time source (default {@link Ticker#SYSTEM}). */
    public Builder ticker(Ticker ticker) {
      this.ticker = ticker;
      return this;
    }

    /**
     * Validates the configuration and builds the relay (not yet started); reads the data source's
     * current schema for the default names.
     */
    public CdcRelay build() {
      if (batchSize < 1 || batchSize > 100_000) {
        throw new IllegalArgumentException("batchSize must be in [1, 100000], was " + batchSize);
      }
      if (maxInFlightBatches < 1 || maxInFlightBatches > 64) {
        throw new IllegalArgumentException(
            "maxInFlightBatches must be in [1, 64], was " + maxInFlightBatches);
      }
      Objects.requireNonNull(batchLinger, "batchLinger");
      if (batchLinger.isNegative() || batchLinger.compareTo(Duration.ofSeconds(1)) > 0) {
        throw new IllegalArgumentException("batchLinger must be in [0, 1 s], was " + batchLinger);
      }
      requirePositive(statusInterval, "statusInterval");
      requirePositive(standbyRetryInterval, "standbyRetryInterval");
      requirePositive(leaseTtl, "leaseTtl");
      if (leaseTtl.compareTo(Duration.ofMillis(200)) < 0) {
        throw new IllegalArgumentException("leaseTtl must be at least 200 ms, was " + leaseTtl);
      }
      Objects.requireNonNull(retention, "retention");
      if (retention.isNegative()) {
        throw new IllegalArgumentException("retention must not be negative, was " + retention);
      }
      requirePositive(purgeInterval, "purgeInterval");
      requirePositive(shutdownTimeout, "shutdownTimeout");
      Objects.requireNonNull(backoff, "backoff");
      Objects.requireNonNull(sleeper, "sleeper");
      Objects.requireNonNull(ticker, "ticker");
      if (!replicationUrl.startsWith("jdbc:postgresql:")) {
        throw new IllegalArgumentException(
            "replicationUrl must be a pgjdbc URL (jdbc:postgresql:...), was " + replicationUrl);
      }
      String id = instanceId != null ? instanceId : defaultInstanceId();
      if (id.isBlank()) {
        throw new IllegalArgumentException("instanceId must not be blank");
      }
      String schema = null;
      if (slotName == null || publicationName == null) {
        schema = ReplicationSetup.currentSchema(dataSource);
      }
      String slot = requireName(slotName != null ? slotName : defaultName(schema), "slotName");
      String pub =
          requireName(
              publicationName != null ? publicationName : defaultName(schema), "publicationName");
      if (schema == null) {
        schema = ReplicationSetup.currentSchema(dataSource);
      }
      Properties props = new Properties();
      props.putAll(replicationProperties);
      return new CdcRelay(
          new CdcEngine.Config(
              id,
              dataSource,
              replicationUrl,
              props,
              schema,
              slot,
              pub,
              batchSize,
              maxInFlightBatches,
              batchLinger,
              binaryValues,
              failoverSlot,
              logicalMessages ? EmitMessageOutbox.create(messagePrefix).prefix() : null,
              statusInterval,
              standbyRetryInterval,
              leaseTtl,
              retention,
              purgeInterval,
              shutdownTimeout,
              backoff,
              sleeper,
              ticker),
          publisher);
    }

    /**
     * {@code postbox_cdc_<schema>}; a schema name that is too long, or has characters a slot name
     * cannot, is shortened or replaced and followed by a hash of the exact name, so that two
     * schemas never share a default.
     */
    static String defaultName(String schema) {
      String plain = "postbox_cdc_" + schema;
      if (NAME.matcher(plain).matches()) {
        return plain;
      }
      java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
      crc.update(schema.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      String hash = String.format("%08x", crc.getValue());
      String cleaned = plain.toLowerCase(java.util.Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
      return cleaned.substring(0, Math.min(cleaned.length(), 63 - 9)) + "_" + hash;
    }

    private static String requireName(String name, String what) {
      if (!NAME.matcher(name).matches()) {
        throw new IllegalArgumentException(
            what
                + " must be lower-case letters, digits and _ (at most 63, not starting with a"
                + " digit), was "
                + name
                + (name.length() > 63 ? " (set it explicitly: the default is too long)" : ""));
      }
      return name;
    }

    private static void requirePositive(Duration d, String name) {
      Objects.requireNonNull(d, name);
      if (d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(name + " must be positive, was " + d);
      }
    }

    private static String defaultInstanceId() {
      String host;
      try {
        host = java.net.InetAddress.getLocalHost().getHostName();
      } catch (java.io.IOException e) {
        host = "host";
      }
      return host
          + "-"
          + ManagementFactory.getRuntimeMXBean().getPid()
          + "-"
          + UUID.randomUUID().toString().substring(0, 8);
    }
  }
}
