package dev.postbox.core.engine.relay;

import dev.postbox.core.Backoff;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.relay.RelayListener;
import dev.postbox.core.relay.UnpublishableRows;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import java.time.Duration;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay behind {@link Relay}: starts and stops its two threads and wires its parts,
 * driver-free, over {@link RelayStore} and {@link RelayPublisher}. The heartbeat thread runs {@link
 * LaneOwnership} (leases, fair share, validity); the publishing thread runs {@link PublishPipeline}
 * (claim, send, settle), which performs lane releases between batches, so a lane is never handed
 * over while one of its rows is in flight; {@link RelayMeters} counts for both.
 */
public final class RelayEngine implements Relay {

  private static final Logger log = LoggerFactory.getLogger(RelayEngine.class);

  /**
   * Frozen configuration.
   *
   * @param idleGrace how long after a claim that found rows the loop claims again at short
   *     intervals before it marks the instance idle
   * @param sleeper how the publishing thread waits during backoff and the idle grace
   * @param ticker the monotonic time for lease validity, purge schedule and batch timings
   * @param heartbeatSleeper how the heartbeat thread waits between heartbeats
   */
  public record Config(
      String instanceId,
      int batchSize,
      Duration leaseTtl,
      Duration heartbeatInterval,
      Duration pollInterval,
      Duration idleGrace,
      Duration retention,
      Duration purgeInterval,
      Duration shutdownTimeout,
      Backoff backoff,
      Sleeper sleeper,
      RelayListener listener,
      PostboxMetrics metrics,
      Duration stuckThreshold,
      UnpublishableRows unpublishableRows,
      Ticker ticker,
      Sleeper heartbeatSleeper) {}

  private final Config config;
  private final RelayStore store;
  private final RelayPublisher publisher;
  private final LaneOwnership lanes;
  private final RelayMeters meters;
  private final PublishPipeline pipeline;
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile boolean running;
  private Thread loopThread;
  private Thread heartbeatThread;

  public RelayEngine(Config config, RelayStore store, RelayPublisher publisher) {
    this.config = config;
    this.store = store;
    this.publisher = publisher;
    // The owner token in the lease table: the configured name plus a per-start incarnation, so a
    // restarted process with the same name can never renew (and so never share) the leases of a
    // previous incarnation that might only be paused; it takes lanes the ordinary way, with a new
    // epoch, once they expire.
    String owner = config.instanceId() + "#" + UUID.randomUUID().toString().substring(0, 8);
    RelayListener listener = new GuardedListener(config.listener());
    this.lanes =
        new LaneOwnership(
            config.instanceId(),
            owner,
            store,
            config.leaseTtl(),
            config.heartbeatInterval(),
            config.ticker(),
            config.heartbeatSleeper(),
            listener,
            this::sampleBacklog);
    this.meters =
        new RelayMeters(
            config.instanceId(), config.metrics(), config.stuckThreshold(), lanes::count);
    this.pipeline =
        new PublishPipeline(
            config, owner, store, publisher, lanes, meters, listener, () -> running);
  }

  private void sampleBacklog() {
    meters.sampleBacklog(store);
  }

  @Override
  public void start() {
    if (!started.compareAndSet(false, true)) {
      throw new IllegalStateException("relay " + config.instanceId() + " was already started");
    }
    publisher.checkAccess(); // rejected credentials fail here, not in an endless retry
    running = true;
    lanes.heartbeat(); // own lanes before the first claim, so a fresh relay starts publishing at
    // once
    heartbeatThread =
        Thread.ofPlatform()
            .name("postbox-relay-heartbeat-" + config.instanceId())
            .daemon(true)
            .start(() -> lanes.heartbeatLoop(() -> running));
    loopThread =
        Thread.ofPlatform()
            .name("postbox-relay-" + config.instanceId())
            .daemon(true)
            .start(pipeline::run);
    log.info("relay {} started, owns {} lanes", config.instanceId(), lanes.count());
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    running = false;
    if (heartbeatThread != null) {
      heartbeatThread.interrupt();
      join(heartbeatThread, config.shutdownTimeout());
    }
    if (loopThread != null) {
      // Let the batch in flight finish and be marked; the loop notices `running` within one poll
      // interval.
      if (!join(loopThread, config.shutdownTimeout().plus(config.pollInterval()))) {
        loopThread.interrupt();
        join(loopThread, Duration.ofSeconds(5));
      }
    }
    try {
      lanes.releaseAll();
    } catch (RuntimeException e) {
      log.warn(
          "relay {}: could not release its lanes at close (they expire)", config.instanceId(), e);
    }
    try {
      publisher.close();
    } catch (RuntimeException e) {
      log.warn("relay {}: closing the publisher failed", config.instanceId(), e);
    }
    log.info("relay {} stopped: {}", config.instanceId(), stats());
  }

  @Override
  public String instanceId() {
    return config.instanceId();
  }

  @Override
  public Set<Integer> ownedLanes() {
    return lanes.lanes();
  }

  @Override
  public Stats stats() {
    return meters.stats();
  }

  private static boolean join(Thread t, Duration timeout) {
    try {
      return t.join(timeout);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
