package dev.postbox.core.engine.relay;

import dev.postbox.core.Backoff;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.relay.Relay;
import dev.postbox.core.relay.RelayListener;
import dev.postbox.core.relay.UnpublishableRows;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.core.spi.RelayStore;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay loop behind {@link Relay}: driver-free, written against {@link RelayStore} and {@link
 * RelayPublisher}.
 *
 * <p>Two threads share the lease state. The heartbeat thread registers the instance, renews leases,
 * acquires lanes up to the fair share and <em>requests</em> the release of lanes above it; the
 * publishing thread performs releases between batches, so a lane is never handed over while one of
 * its rows is in flight. Both hold {@link #leaseLock} while they change the lease table, so their
 * views never cross.
 */
public final class RelayEngine implements Relay {

  private static final Logger log = LoggerFactory.getLogger(RelayEngine.class);

  /** Frozen configuration. */
  public record Config(
      String instanceId,
      int batchSize,
      Duration leaseTtl,
      Duration heartbeatInterval,
      Duration pollInterval,
      Duration retention,
      Duration purgeInterval,
      Duration shutdownTimeout,
      Backoff backoff,
      Sleeper sleeper,
      RelayListener listener,
      PostboxMetrics metrics,
      Duration stuckThreshold,
      UnpublishableRows unpublishableRows) {}

  /**
   * Lanes owned and the local deadline (System.nanoTime) before which their leases are surely
   * valid.
   */
  private record Ownership(Map<Integer, LaneLease> leases, long validUntilNanos) {
    static final Ownership NONE = new Ownership(Map.of(), Long.MIN_VALUE);
  }

  private final Config config;
  // The owner token in the lease table: the configured name plus a per-start incarnation, so a
  // restarted process
  // with the same name can never renew (and so never share) the leases of a previous incarnation
  // that might only be
  // paused; it takes lanes the ordinary way, with a new epoch, once they expire.
  private final String owner;
  private final RelayStore store;
  private final RelayPublisher publisher;
  private final ReentrantLock leaseLock = new ReentrantLock();
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile boolean running;
  private volatile Ownership ownership = Ownership.NONE;
  private volatile Set<Integer> releaseRequested = Set.of();
  private long claimNanos; // publishing thread only
  private Thread loopThread;
  private Thread heartbeatThread;

  private final AtomicLong published = new AtomicLong();
  private final AtomicLong publishFailures = new AtomicLong();
  private final AtomicLong permanentFailures = new AtomicLong();
  private final AtomicLong fenced = new AtomicLong();
  private final AtomicLong batches = new AtomicLong();
  private final PostboxMetrics.Counter publishedCounter;
  private final PostboxMetrics.Counter failuresCounter;
  private final UnpublishableRowMarker unpublishableRows;
  // The backlog as last sampled by the heartbeat (null until the first sample, or when the store
  // cannot tell).
  private volatile RelayStore.Backlog backlog;

  public RelayEngine(Config config, RelayStore store, RelayPublisher publisher) {
    this.config = config;
    this.owner = config.instanceId() + "#" + java.util.UUID.randomUUID().toString().substring(0, 8);
    this.store = store;
    this.publisher = publisher;
    PostboxMetrics m = config.metrics();
    Tags tags = Tags.of("instance", config.instanceId());
    this.publishedCounter = m.counter(MetricName.RELAY_PUBLISHED, tags);
    this.failuresCounter = m.counter(MetricName.RELAY_PUBLISH_FAILURES, tags);
    this.unpublishableRows =
        new UnpublishableRowMarker(
            config.instanceId(),
            config.unpublishableRows(),
            store,
            m.counter(MetricName.RELAY_UNPUBLISHABLE, tags));
    m.gauge(MetricName.RELAY_LANES_OWNED, tags, () -> ownership.leases().size());
    m.gauge(MetricName.RELAY_PENDING, tags, () -> backlog == null ? Double.NaN : backlog.pending());
    m.gauge(MetricName.RELAY_LAG_AGE, tags, () -> backlogAgeSeconds());
    m.gauge(
        MetricName.RELAY_STUCK,
        tags,
        () ->
            backlog == null
                ? Double.NaN
                : backlog.oldestAge().compareTo(config.stuckThreshold()) > 0 ? 1 : 0);
  }

  private double backlogAgeSeconds() {
    RelayStore.Backlog b = backlog;
    return b == null ? Double.NaN : b.oldestAge().toNanos() / 1e9;
  }

  @Override
  public void start() {
    if (!started.compareAndSet(false, true)) {
      throw new IllegalStateException("relay " + config.instanceId() + " was already started");
    }
    running = true;
    heartbeat(); // own lanes before the first claim, so a fresh relay starts publishing at once
    heartbeatThread =
        Thread.ofPlatform()
            .name("postbox-relay-heartbeat-" + config.instanceId())
            .daemon(true)
            .start(this::heartbeatLoop);
    loopThread =
        Thread.ofPlatform()
            .name("postbox-relay-" + config.instanceId())
            .daemon(true)
            .start(this::publishLoop);
    log.info("relay {} started, owns {} lanes", config.instanceId(), ownership.leases().size());
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
      leaseLock.lock();
      try {
        store.unregister(owner);
        ownership = Ownership.NONE;
      } finally {
        leaseLock.unlock();
      }
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
    return new TreeSet<>(ownership.leases().keySet());
  }

  @Override
  public Stats stats() {
    return new Stats(
        published.get(),
        publishFailures.get(),
        permanentFailures.get(),
        fenced.get(),
        batches.get());
  }

  // ---------------------------------------------------------------- heartbeat

  private void heartbeatLoop() {
    while (running) {
      try {
        Thread.sleep(config.heartbeatInterval());
      } catch (InterruptedException e) {
        return;
      }
      if (running) {
        heartbeat();
      }
    }
  }

  private void heartbeat() {
    leaseLock.lock();
    try {
      long t0 = System.nanoTime();
      Duration ttl = config.leaseTtl();
      int live = store.heartbeat(owner, ttl);
      Map<Integer, LaneLease> mine = new TreeMap<>();
      for (LaneLease l : store.renewLeases(owner, ttl)) {
        mine.put(l.lane(), l);
      }
      int fair = (store.laneCount() + live - 1) / live;
      Set<Integer> release = Set.of();
      if (mine.size() > fair) {
        List<Integer> lanes = new ArrayList<>(mine.keySet());
        release = Set.copyOf(lanes.subList(fair, lanes.size()));
      } else if (mine.size() < fair) {
        for (LaneLease l : store.acquireLeases(owner, fair - mine.size(), ttl)) {
          mine.put(l.lane(), l);
        }
      }
      // Leases were extended to db_now + ttl where db_now >= t0; keep a margin for clock rate and
      // latency.
      long valid = t0 + ttl.toNanos() - ttl.toNanos() / 5;
      Set<Integer> before = ownership.leases().keySet();
      ownership = new Ownership(Map.copyOf(mine), valid);
      releaseRequested = release;
      if (!before.equals(mine.keySet())) {
        log.debug("relay {} owns lanes {}", config.instanceId(), mine.keySet());
        notifyListener(() -> config.listener().onLanesChanged(new TreeSet<>(mine.keySet())));
      }
    } catch (RuntimeException e) {
      log.warn("relay {}: heartbeat failed; will retry", config.instanceId(), e);
    } finally {
      leaseLock.unlock();
    }
    sampleBacklog();
  }

  /** Samples the pending rows for the gauges: once per heartbeat, never per batch. */
  private void sampleBacklog() {
    if (config.metrics() == PostboxMetrics.noop()) {
      return;
    }
    try {
      backlog = store.backlog().orElse(null);
    } catch (RuntimeException e) {
      log.debug("relay {}: sampling the backlog failed: {}", config.instanceId(), e.toString());
    }
  }

  private void applyReleases() {
    Set<Integer> release = releaseRequested;
    if (release.isEmpty()) {
      return;
    }
    leaseLock.lock();
    try {
      Map<Integer, LaneLease> mine = new HashMap<>(ownership.leases());
      List<LaneLease> giving = new ArrayList<>();
      for (Integer lane : release) {
        LaneLease l = mine.remove(lane);
        if (l != null) {
          giving.add(l);
        }
      }
      if (!giving.isEmpty()) {
        store.releaseLeases(owner, giving);
        ownership = new Ownership(Map.copyOf(mine), ownership.validUntilNanos());
        log.debug("relay {} released lanes {}", config.instanceId(), release);
        Set<Integer> now = new TreeSet<>(mine.keySet());
        notifyListener(() -> config.listener().onLanesChanged(now));
      }
      releaseRequested = Set.of();
    } finally {
      leaseLock.unlock();
    }
  }

  // ---------------------------------------------------------------- publishing

  /**
   * A batch handed to the publisher and not yet settled (marked): the relay claims the next batch
   * and marks the previous one while it is in flight.
   */
  private record InFlight(
      Collection<LaneLease> leases,
      List<OutboxRecord> batch,
      RelayPublisher.PendingPublish pending,
      long sentNanos) {
    Set<Long> positions() {
      Set<Long> p = new java.util.HashSet<>(batch.size() * 2);
      for (OutboxRecord r : batch) {
        p.add(r.position());
      }
      return p;
    }
  }

  /**
   * Claims, publishes and marks in a pipeline: while batch n is in flight to the broker, the loop
   * claims batch n+1 (leaving out n's rows, still pending), waits for n's outcomes, sends n+1 if
   * every row of n was acknowledged or failed permanently, and only then marks n. So batches are
   * never in flight together, and a transient failure in n stops n+1 from being sent (it is dropped
   * unsent and claimed again, after n's failed rows, once the backoff is over): no row of a key
   * goes out ahead of an earlier row of that key that was not acknowledged. A crash after n+1 was
   * sent and before n was marked republishes both, in position order (duplicates, as for a crash
   * between acknowledgement and mark).
   */
  private void publishLoop() {
    int failures = 0;
    boolean idle = true; // a new instance row starts idle (V7 default)
    long nextPurge = System.nanoTime();
    InFlight flying = null;
    try {
      while (running) {
        try {
          if (flying != null && (!releaseRequested.isEmpty() || !leasesValid(ownership))) {
            // a lane is never handed over (nor a lapsed lease renewed) with one of its rows in
            // flight
            InFlight done = flying;
            flying = null;
            failures = afterSettling(settle(done, done.pending().outcomes()), failures);
            continue;
          }
          applyReleases();
          Ownership own = ownership;
          if (!leasesValid(own)) {
            store.awaitWork(config.pollInterval());
            continue;
          }
          Collection<LaneLease> leases = own.leases().values();
          long c0 = System.nanoTime();
          List<OutboxRecord> batch =
              store.claim(
                  owner,
                  leases,
                  config.batchSize(),
                  flying == null ? Set.of() : flying.positions());
          claimNanos = System.nanoTime() - c0;
          if (!batch.isEmpty() && idle) {
            store.markIdle(owner, false); // busy: writers need not notify while we drain
            idle = false;
          }
          if (flying != null) {
            InFlight done = flying;
            flying = null;
            List<PublishOutcome> outcomes = done.pending().outcomes();
            if (!batch.isEmpty() && allAcknowledged(outcomes) && leasesValid(ownership)) {
              flying = send(leases, batch); // n+1 goes out while n is marked
            }
            failures = afterSettling(settle(done, outcomes), failures);
            if (flying != null || !batch.isEmpty()) {
              continue; // sent, or dropped unsent after a failure or a lapsed lease: claim again
            }
          }
          if (batch.isEmpty()) {
            if (System.nanoTime() - nextPurge >= 0) {
              purge(leases);
              nextPurge = System.nanoTime() + config.purgeInterval().toNanos();
            }
            if (!idle) {
              // from now on writers wake us; claim once more for rows committed before the mark
              store.markIdle(owner, true);
              idle = true;
              continue;
            }
            store.awaitWork(config.pollInterval());
            continue;
          }
          if (!leasesValid(ownership)) {
            continue; // our lease may have lapsed while we claimed: do not publish on a stale lease
          }
          flying = send(leases, batch);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (RuntimeException e) {
          failures++;
          log.warn(
              "relay {}: cycle failed (attempt {}); backing off", config.instanceId(), failures, e);
          flying = abandon(flying);
          try {
            config.sleeper().sleep(config.backoff().delay(failures, ThreadLocalRandom.current()));
          } catch (InterruptedException ie) {
            Thread.currentThread().interrupt();
            return;
          }
        }
      }
    } finally {
      if (flying != null && !Thread.currentThread().isInterrupted()) {
        try {
          settle(flying, flying.pending().outcomes()); // a clean stop leaves nothing to republish
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
          log.warn(
              "relay {}: marking the last batch at stop failed; its rows are published again",
              config.instanceId(),
              e);
        }
      }
    }
  }

  private static boolean leasesValid(Ownership own) {
    return !own.leases().isEmpty() && System.nanoTime() - own.validUntilNanos() < 0;
  }

  /**
   * Whether batch n+1 may be sent before n is marked: only if every row of n was acknowledged.
   * After a transient failure n+1 waits behind the retry; after an unpublishable row, n+1 (claimed
   * before the row was marked) may hold later rows of its key or topic, so it is dropped unsent and
   * claimed again once the row holds them.
   */
  private static boolean allAcknowledged(List<PublishOutcome> outcomes) {
    for (PublishOutcome o : outcomes) {
      if (o instanceof PublishOutcome.Failed) {
        return false;
      }
    }
    return true;
  }

  /** Backs off after a transient failure; returns the new count of consecutive failures. */
  private int afterSettling(boolean transientFailure, int failures) throws InterruptedException {
    if (!transientFailure) {
      return 0;
    }
    config.sleeper().sleep(config.backoff().delay(failures + 1, ThreadLocalRandom.current()));
    return failures + 1;
  }

  private InFlight send(Collection<LaneLease> leases, List<OutboxRecord> batch)
      throws InterruptedException {
    CrashPoints.hit("relay.after-claim");
    List<Message> messages = new ArrayList<>(batch.size());
    PublishOutcome[] decided = UnreadableRows.decide(batch);
    for (int i = 0; i < batch.size(); i++) {
      if (decided == null || decided[i] == null) {
        messages.add(batch.get(i).message());
      }
    }
    long p0 = System.nanoTime();
    RelayPublisher.PendingPublish pending = publisher.send(messages);
    return new InFlight(
        List.copyOf(leases),
        batch,
        decided == null ? pending : UnreadableRows.merge(decided, pending),
        p0);
  }

  /**
   * After a failed cycle: waits for the batch in flight, if any, and leaves its rows pending (they
   * are claimed and published again). Returns null.
   */
  private InFlight abandon(InFlight flying) {
    if (flying != null) {
      try {
        flying.pending().outcomes();
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
      } catch (RuntimeException ignored) {
        // its rows stay pending either way
      }
    }
    return null;
  }

  /**
   * Marks the outcome of one batch whose publish is complete; returns whether a transient failure
   * occurred.
   */
  private boolean settle(InFlight done, List<PublishOutcome> outcomes) {
    Collection<LaneLease> leases = done.leases();
    List<OutboxRecord> batch = done.batch();
    long p1 = System.nanoTime();
    if (outcomes.size() != batch.size()) {
      throw new IllegalStateException(
          "publisher returned " + outcomes.size() + " outcomes for " + batch.size() + " messages");
    }
    List<OutboxRecord> acked = new ArrayList<>(batch.size());
    List<PublishOutcome.Acknowledged> acks = new ArrayList<>(batch.size());
    List<OutboxRecord> unpublishable = new ArrayList<>();
    List<PublishOutcome.Failed> unpublishableOutcomes = new ArrayList<>();
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
          publishFailures.incrementAndGet();
          failuresCounter.increment();
          notifyListener(() -> config.listener().onPublishFailed(r, f.error(), f.permanent()));
          if (f.unpublishable()) {
            unpublishable.add(r);
            unpublishableOutcomes.add(f);
            held.add(r, f.topicWide());
          } else if (!held.holds(r)) {
            retried++; // a later row of an unpublishable row's key or topic is not retried: it
            // waits
          }
        }
      }
    }
    boolean transientFailure = retried > 0;
    CrashPoints.hit("relay.after-ack-before-mark");
    if (!acked.isEmpty()) {
      int marked = store.markPublished(owner, leases, acked, acks, config.retention().isZero());
      CrashPoints.hit("relay.after-mark");
      if (log.isDebugEnabled()) {
        log.debug(
            "batch of {}: claim {} ms, publish {} ms (overlapping the next claim), mark {} ms",
            batch.size(),
            claimNanos / 1_000_000,
            (p1 - done.sentNanos()) / 1_000_000,
            (System.nanoTime() - p1) / 1_000_000);
      }
      published.addAndGet(marked);
      publishedCounter.increment(marked);
      batches.incrementAndGet();
      if (marked < acked.size()) {
        fenced.addAndGet(acked.size() - marked);
        log.warn(
            "relay {}: {} of {} acknowledged rows not marked: lane lease lost to another instance",
            config.instanceId(),
            acked.size() - marked,
            acked.size());
        int m = marked;
        notifyListener(() -> config.listener().onFenced(acked.size(), m));
      }
      notifyListener(() -> config.listener().onPublished(acked));
    }
    for (int i = 0; i < unpublishable.size(); i++) {
      if (unpublishableRows.mark(
          owner, leases, unpublishable.get(i), unpublishableOutcomes.get(i))) {
        permanentFailures.incrementAndGet();
      }
    }
    if (transientFailure) {
      log.warn(
          "relay {}: {} of {} rows not acknowledged; retrying with backoff",
          config.instanceId(),
          retried,
          batch.size());
    }
    return transientFailure;
  }

  private void purge(Collection<LaneLease> leases) {
    if (config.retention().isZero()) {
      return;
    }
    int n;
    do {
      n = store.purgePublished(leases, config.retention(), 5_000);
    } while (n == 5_000 && running);
  }

  private void notifyListener(Runnable call) {
    try {
      call.run();
    } catch (RuntimeException e) {
      log.warn("relay listener threw; ignored", e);
    }
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
