package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.Backoff;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.postgresql.replication.LogSequenceNumber;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wires the CDC relay's threads and their order of shutdown: the {@link LeaseKeeper} (renews the
 * slot lease), the {@link SlotStreamer} (reads the slot, confirms), the {@link PublishLoop}
 * (publishes) and the {@link PublishedRowMarker} (marks, then lets the tracker advance). A clean
 * close stops reading, lets the batch in flight be acknowledged and marked, confirms what is done,
 * and only then lets go of the slot.
 */
public final class CdcEngine {

  private static final Logger log = LoggerFactory.getLogger(CdcEngine.class);

  /**
   * How long the marker gathers settled batches before marking them in one transaction. Marking is
   * off a row's way to the broker (it only lets the slot be confirmed), and each mark is a commit,
   * a WAL flush and WAL the walsender decodes too: under a trickle of small batches, one mark per
   * batch adds a transaction per few events. Costs at most this much later confirmation (the slot
   * is confirmed at most every 20 ms anyway).
   */
  static final Duration MARK_GATHER = Duration.ofMillis(10);

  /** Frozen configuration (validated by {@code CdcRelay.Builder}). */
  public record Config(
      String instanceId,
      DataSource dataSource,
      String replicationUrl,
      Properties replicationProperties,
      String schema,
      String slotName,
      String publicationName,
      int batchSize,
      int maxInFlightBatches,
      Duration batchLinger,
      boolean binaryValues,
      boolean failoverSlot,
      String messagePrefix,
      Duration statusInterval,
      Duration standbyRetryInterval,
      Duration leaseTtl,
      Duration retention,
      Duration purgeInterval,
      Duration shutdownTimeout,
      Backoff backoff,
      Sleeper sleeper,
      Ticker ticker) {}

  /** Counters since start. */
  public record Counters(
      long published,
      long publishFailures,
      long unpublishable,
      long marked,
      long batches,
      long dropped,
      long slotRecoveries,
      long republishedFromTable) {}

  private final Config config;
  private final RelayPublisher publisher;
  private final ReplicationSetup setup;
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile boolean running;
  private SlotStreamer streamer;
  private PublishLoop publishLoop;
  private PublishedRowMarker marker;
  private SlotLease lease;
  private SlotRecovery recovery;
  private LeaseKeeper leaseKeeper;
  private Thread leaseThread;
  private Thread streamThread;
  private Thread publishThread;
  private Thread markThread;

  public CdcEngine(Config config, RelayPublisher publisher) {
    this.config = config;
    this.publisher = publisher;
    this.setup =
        new ReplicationSetup(
                config.dataSource(),
                config.replicationUrl(),
                config.replicationProperties(),
                config.schema(),
                config.slotName(),
                config.publicationName(),
                config.statusInterval())
            .withLogicalMessages(config.messagePrefix() != null)
            .withBinaryValues(config.binaryValues())
            .withFailoverSlot(config.failoverSlot());
  }

  /** Prepares the publication and slot, then starts the threads. */
  public void start() {
    if (!started.compareAndSet(false, true)) {
      throw new IllegalStateException("CDC relay " + config.instanceId() + " was already started");
    }
    setup.prepare();
    lease =
        new SlotLease(
            config.dataSource(),
            config.slotName(),
            config.instanceId(),
            config.leaseTtl(),
            config.ticker());
    lease.ensureRow();
    recovery =
        new SlotRecovery(
            config.instanceId(),
            config.dataSource(),
            setup,
            lease,
            config.slotName(),
            config.sleeper());
    AtomicReference<CommitTracker> trackers =
        new AtomicReference<>(new CommitTracker(0, setup.confirmedFlush()));
    BlockingQueue<CdcEvent> queue =
        new ArrayBlockingQueue<>(config.batchSize() * (config.maxInFlightBatches() + 3));
    marker =
        new PublishedRowMarker(
            config.dataSource(),
            trackers::get,
            lease,
            config.retention(),
            config.purgeInterval(),
            config.backoff(),
            config.sleeper(),
            config.ticker(),
            MARK_GATHER);
    running = true;
    publishLoop =
        new PublishLoop(
            queue,
            publisher,
            marker::submit,
            config.batchSize(),
            config.backoff(),
            config.sleeper(),
            () -> running,
            lease::holds,
            config.maxInFlightBatches(),
            config.batchLinger());
    streamer =
        new SlotStreamer(
            config.instanceId(),
            setup,
            new PgOutputDecoder(config.schema(), config.messagePrefix()),
            lease,
            recovery,
            trackers,
            queue,
            config.standbyRetryInterval(),
            config.statusInterval(),
            config.backoff(),
            config.sleeper(),
            config.ticker());
    leaseKeeper = new LeaseKeeper(lease, trackers, config.sleeper(), config.ticker());
    String id = config.instanceId();
    leaseThread =
        Thread.ofPlatform().name("postbox-cdc-lease-" + id).daemon(true).start(leaseKeeper::run);
    markThread = Thread.ofPlatform().name("postbox-cdc-mark-" + id).daemon(true).start(marker::run);
    publishThread =
        Thread.ofPlatform().name("postbox-cdc-publish-" + id).daemon(true).start(publishLoop::run);
    streamThread =
        Thread.ofPlatform().name("postbox-cdc-stream-" + id).daemon(true).start(streamer::run);
    log.info(
        "CDC relay {} started on slot {}, publication {}",
        id,
        config.slotName(),
        config.publicationName());
  }

  /** Stops in order (see the class comment) and closes the publisher. Idempotent. */
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    if (streamer != null) {
      streamer.stopReading();
      running = false;
      join(publishThread, config.shutdownTimeout());
      marker.stop();
      join(markThread, config.shutdownTimeout());
      streamer.stop();
      join(streamThread, config.shutdownTimeout());
      leaseKeeper.stop();
      join(leaseThread, config.shutdownTimeout());
    }
    try {
      publisher.close();
    } catch (RuntimeException e) {
      log.warn("CDC relay {}: closing the publisher failed", config.instanceId(), e);
    }
    log.info("CDC relay {} stopped: {}", config.instanceId(), counters());
  }

  /** Whether this instance streams the slot now. */
  public boolean active() {
    return streamer != null && streamer.active();
  }

  /** Warnings of the start-up checks (an unbounded {@code max_slot_wal_keep_size}). */
  public java.util.List<String> startupWarnings() {
    return setup.warnings();
  }

  /** The slot lease's epoch this instance streams under (0 while it holds none). */
  public long leaseEpoch() {
    return streamer == null ? 0 : streamer.epoch();
  }

  /** The last position this instance confirmed to the slot, as PostgreSQL writes it. */
  public String confirmedLsn() {
    return LogSequenceNumber.valueOf(streamer == null ? 0 : streamer.confirmed()).asString();
  }

  public Counters counters() {
    if (publishLoop == null) {
      return new Counters(0, 0, 0, 0, 0, 0, 0, 0);
    }
    return new Counters(
        publishLoop.published.get(),
        publishLoop.publishFailures.get(),
        publishLoop.unpublishable.get(),
        marker.marked(),
        publishLoop.batches.get(),
        publishLoop.dropped.get(),
        recovery.recoveries.get(),
        recovery.republished.get());
  }

  private static void join(Thread t, Duration timeout) {
    try {
      if (!t.join(timeout)) {
        t.interrupt();
        t.join(Duration.ofSeconds(5));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
