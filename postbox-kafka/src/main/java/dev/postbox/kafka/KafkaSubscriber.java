package dev.postbox.kafka;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.BatchHandler;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.DuplicateListener;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.engine.OffsetTracker;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.kafka.internal.CommitBeforeHandling;
import dev.postbox.kafka.internal.InFlightLimit;
import dev.postbox.kafka.internal.MembershipFence;
import dev.postbox.kafka.internal.PartitionRevocation;
import dev.postbox.kafka.internal.PausePolicy;
import dev.postbox.kafka.internal.PollLoopHealth;
import dev.postbox.kafka.internal.StoredRecords;
import dev.postbox.kafka.internal.SubscriberGauges;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes a {@link Subscription} from Kafka with its delivery guarantee, ordering and concurrency.
 *
 * <ul>
 *   <li><b>Offsets.</b> Only the contiguous finished prefix of each partition is committed: a
 *       committed offset never passes a record that is not finished, however records of different
 *       keys complete. {@code AT_MOST_ONCE} commits before handling instead.
 *   <li><b>Key-ordered concurrency.</b> With {@link Ordering#KEY}, records of one key run in order
 *       and different keys of the same partition run concurrently on virtual threads, up to the
 *       subscription's concurrency.
 *   <li><b>Back-pressure.</b> When {@code maxInFlight} records are unfinished, every assigned
 *       partition is paused; reading resumes at half of it, as soon as a worker gets there. Where a
 *       partition's records run one after another (batches, {@link Ordering#PARTITION}), a
 *       partition is also paused alone once it holds its share of {@code maxInFlight} (divided by
 *       the assigned partitions, at least two batches) until it is down to half of that, so that
 *       one partition's backlog cannot fill the window while the others wait. The poll loop never
 *       blocks on handlers, so the consumer stays in its group.
 *   <li><b>Rebalances</b> (cooperative-sticky by default). On revocation, records of the partition
 *       that have not started are dropped, running ones may finish within the shutdown timeout, and
 *       the finished prefix is committed; anything else is redelivered to the new owner (and
 *       absorbed by the inbox).
 *   <li><b>Shutdown.</b> {@link #close()} stops reading, lets running records finish within the
 *       shutdown timeout, commits and closes.
 * </ul>
 *
 * <p>Defaults: {@code isolation.level=read_committed}, {@code auto.offset.reset=earliest},
 * auto-commit off, cooperative-sticky assignment, {@code max.poll.interval.ms} = the shutdown
 * timeout + 30 s (the poll thread never runs handlers; this is also the group's rebalance timeout,
 * so a rebalance waits that long at most for members that died in it), and for a batch size above 1
 * {@code max.poll.records} = the batch size (at most Kafka's 500; a property set on the builder
 * wins). Thread-safe.
 */
public final class KafkaSubscriber implements AutoCloseable {

  /**
   * Consumer properties set by default, before {@link Builder#consumerProperty} (which may override
   * them): {@code isolation.level=read_committed}, {@code auto.offset.reset=earliest},
   * cooperative-sticky assignment.
   */
  public static final Map<String, Object> DEFAULT_CONSUMER_PROPERTIES =
      Map.of(
          ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
          ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
          ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
              CooperativeStickyAssignor.class.getName());

  /** Default delays of the parked retries. */
  public static final List<Duration> DEFAULT_PARKING_TIERS =
      List.of(Duration.ofSeconds(10), Duration.ofMinutes(1), Duration.ofMinutes(10));

  /** Default: the rest of a parked key goes on when its head is dead-lettered. */
  public static final boolean DEFAULT_BLOCK_KEY_AFTER_DEAD_LETTER = false;

  /** Default: an inbox retention shorter than a topic's retention is refused at start. */
  public static final boolean DEFAULT_FORCE_INBOX_RETENTION = false;

  /** Default: an idempotency TTL shorter than a topic's retention is refused at start. */
  public static final boolean DEFAULT_FORCE_IDEMPOTENCY_TTL = false;

  /** Default interval between purges of inbox records older than the inbox retention. */
  public static final Duration DEFAULT_INBOX_PURGE_INTERVAL = Duration.ofMinutes(10);

  private static final Logger log = LoggerFactory.getLogger(KafkaSubscriber.class);
  private static final Duration VERIFY_TIMEOUT = Duration.ofSeconds(2);

  /**
   * The longest a synchronous commit (at revocation, at close) holds the poll thread; a commit that
   * does not finish in time only means its records are delivered again (and absorbed by the inbox).
   */
  static final Duration SYNC_COMMIT_TIMEOUT = Duration.ofSeconds(10);

  /**
   * Added to the shutdown timeout for the default {@code max.poll.interval.ms}: the poll thread
   * never runs handlers, it blocks only while a revocation waits for running records (at most the
   * shutdown timeout) and commits (at most {@link #SYNC_COMMIT_TIMEOUT}).
   */
  static final Duration POLL_INTERVAL_MARGIN = Duration.ofSeconds(30);

  private static final Duration POLL_TIMEOUT = Duration.ofMillis(50);
  private static final Duration PARTLY_PAUSED_POLL_TIMEOUT = Duration.ofMillis(5);

  private final Subscription subscription;
  private final DeliveryProcessor processor;
  private final Map<String, Object> config;
  private final KeyedExecutor executor;
  private final Map<TopicPartition, OffsetTracker> trackers = new ConcurrentHashMap<>();
  private final Map<TopicPartition, Long> committed = new HashMap<>(); // poll thread only
  private final InFlightLimit inFlight;
  private final CountDownLatch stopped = new CountDownLatch(1);
  private volatile boolean running;
  private volatile boolean closing;
  private volatile Set<TopicPartition> assignment = Set.of();
  private KafkaConsumer<byte[], byte[]> consumer;
  private final PausePolicy pauses;
  private boolean somePaused; // poll thread only
  // records read and not finished, per partition (for the per-partition pauses)
  private final Map<TopicPartition, AtomicInteger> partitionInFlight = new ConcurrentHashMap<>();
  private Thread pollThread;

  private final Optional<InboxStore> inbox;
  private final boolean forceInboxRetention;
  private final boolean forceIdempotencyTtl;
  private final Duration inboxPurgeInterval;
  private Thread purgeThread;
  private final boolean parkingEnabled;
  private Thread unparkThread;
  private final KafkaRetryTopics retryTopics;
  private final PostboxMetrics metrics;
  private final java.time.Clock clock;
  private final SubscriberGauges gauges;
  private final MembershipFence fence;
  private final PollLoopHealth health;
  private CommitBeforeHandling preCommit; // AT_MOST_ONCE; poll thread only

  private KafkaSubscriber(Builder b) {
    this.subscription = b.subscription;
    this.inbox = Optional.ofNullable(b.inbox);
    this.forceInboxRetention = b.forceInboxRetention;
    this.forceIdempotencyTtl = b.forceIdempotencyTtl;
    this.inboxPurgeInterval = b.inboxPurgeInterval;
    this.retryTopics =
        b.retryTiers == null
            ? null
            : new KafkaRetryTopics(
                b.subscription.name(), b.subscription.topics(), b.retryTiers, b.config, b.clock);
    this.processor =
        new DeliveryProcessor(
            b.subscription,
            b.handler,
            b.batchHandler,
            Optional.ofNullable(b.inbox),
            b.idempotencyStore == null
                ? Optional.empty()
                : Optional.of(
                    new DeliveryProcessor.Idempotency(
                        b.idempotencyStore, b.onDuplicate, dev.postbox.core.time.Sleeper.SYSTEM)),
            Optional.ofNullable(b.deadLetters),
            b.parking == null
                ? Optional.empty()
                : Optional.of(
                    new DeliveryProcessor.Parking(
                        b.parking,
                        b.parkingTiers,
                        b.blockKeyAfterDeadLetter,
                        KafkaSubscriber::incoming)),
            Optional.ofNullable(retryTopics),
            b.clock,
            b.metrics,
            b.openTelemetry);
    this.metrics = b.metrics;
    this.clock = b.clock;
    this.parkingEnabled = b.parking != null;
    Map<String, Object> c = new HashMap<>(b.config);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, subscription.name());
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    if (subscription.batchSize() > 1) {
      // a poll then holds about one batch, so the per-partition pauses can take turns
      c.putIfAbsent(
          ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
          Math.min(ConsumerConfig.DEFAULT_MAX_POLL_RECORDS, subscription.batchSize()));
    }
    // Kafka's default (5 min) is for poll loops that run handlers. Ours does not, and this value is
    // also the group's rebalance timeout: how long a rebalance waits for members that never rejoin.
    // After a broker restart with members dying mid-rebalance, a group was seen waiting in
    // PreparingRebalance for over 4 minutes with every live consumer unassigned (issue 13 #7).
    c.putIfAbsent(
        ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG,
        (int)
            Math.min(
                Integer.MAX_VALUE,
                subscription.shutdownTimeout().plus(POLL_INTERVAL_MARGIN).toMillis()));
    this.config = c;
    this.fence =
        new MembershipFence(subscription.name(), MembershipFence.thresholdFor(c), System::nanoTime);
    this.health = new PollLoopHealth(b.clock);
    this.gauges =
        new SubscriberGauges(b.metrics, subscription.name(), b.clock, () -> assignment, trackers);
    this.inFlight = new InFlightLimit(subscription.maxInFlight());
    boolean serial = subscription.batchSize() > 1 || subscription.ordering() == Ordering.PARTITION;
    this.pauses =
        new PausePolicy(subscription.maxInFlight(), serial ? 2 * subscription.batchSize() : 0);
    this.executor = new KeyedExecutor("postbox-" + subscription.name(), subscription.concurrency());
  }

  /** The consumer's configuration as built (defaults applied); for tests. */
  Map<String, Object> consumerConfig() {
    return Map.copyOf(config);
  }

  /** A builder for a subscriber to the cluster at {@code bootstrapServers}. */
  public static Builder builder(String bootstrapServers, Subscription subscription) {
    return new Builder(bootstrapServers, subscription);
  }

  /**
   * Joins the group and starts consuming on a new thread.
   *
   * @throws InboxRetentionTooShortException for an {@code EFFECTIVELY_ONCE} subscription whose
   *     inbox retention is shorter than a topic's {@code retention.ms}, unless forced
   * @throws IdempotencyTtlTooShortException for a {@code DEDUPLICATED} subscription whose
   *     idempotency TTL is shorter than a topic's {@code retention.ms}, unless forced
   */
  public synchronized void start() {
    if (pollThread != null) {
      throw new IllegalStateException("already started");
    }
    if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      checkInboxRetention();
    }
    if (subscription.guarantee() == DeliveryGuarantee.DEDUPLICATED) {
      checkIdempotencyTtl();
    }
    if (retryTopics != null) {
      retryTopics.open(processor);
    }
    consumer =
        new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    preCommit = new CommitBeforeHandling(consumer, subscription.name());
    running = true;
    health.started();
    gauges.health(health::alive, this::fenced);
    if (retryTopics != null) {
      retryTopics.start();
    }
    if (parkingEnabled) {
      unparkThread =
          Thread.ofVirtual().name("postbox-unpark-" + subscription.name()).start(this::unparkLoop);
    }
    if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      purgeThread =
          Thread.ofVirtual()
              .name("postbox-inbox-purge-" + subscription.name())
              .start(this::purgeLoop);
    }
    pollThread =
        Thread.ofPlatform().name("postbox-poll-" + subscription.name()).start(this::pollLoop);
  }

  /** Counters since start. */
  public ConsumerStats stats() {
    return processor.stats();
  }

  /** Partitions currently assigned to this instance. */
  public Set<TopicPartition> assignment() {
    return assignment;
  }

  /** Records read and not yet finished. */
  public int inFlight() {
    return inFlight.get();
  }

  /**
   * What this subscriber is doing now: whether its poll loop runs (or why it died), its partitions,
   * whether records wait on the membership fence, when it last polled.
   */
  public SubscriberState state() {
    return new SubscriberState(
        running,
        health.alive(),
        health.failure(),
        assignment,
        fenced(),
        health.lastPoll(),
        inFlight.get());
  }

  private boolean fenced() {
    return health.alive()
        && subscription.guarantee() != DeliveryGuarantee.AT_MOST_ONCE
        && fence.fenced();
  }

  /**
   * Stops reading, lets running records finish (up to the shutdown timeout; the rest is abandoned
   * and redelivered to the next owner), commits the finished prefix and leaves the group.
   * Idempotent.
   */
  @Override
  public void close() {
    synchronized (this) {
      if (pollThread == null || !running) {
        return;
      }
      running = false;
    }
    try {
      stopped.await();
      pollThread.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (purgeThread != null) {
      purgeThread.interrupt();
    }
    if (unparkThread != null) {
      try {
        unparkThread.join(subscription.shutdownTimeout().toMillis() + 1_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    executor.close();
    if (retryTopics != null) {
      retryTopics.close();
    }
    log.info("{} closed: {}", subscription.name(), stats());
  }

  // ---------------------------------------------------------------- inbox retention

  /**
   * A dedupe record must outlive every copy of its message that Kafka can still deliver: if it is
   * purged while the topic still holds the message, a redelivery (a rebalance, an offset reset, a
   * replay) applies it a second time.
   */
  private void checkInboxRetention() {
    Map<String, Long> retention = KafkaTopics.retentionMillis(config, subscription.topics());
    for (Map.Entry<String, Long> e : retention.entrySet()) {
      long topicMs = e.getValue();
      long inboxMs = subscription.inboxRetention().toMillis();
      boolean tooShort = topicMs < 0 || inboxMs < topicMs;
      if (tooShort && !forceInboxRetention) {
        throw new InboxRetentionTooShortException(
            "subscription '"
                + subscription.name()
                + "' keeps dedupe records for "
                + subscription.inboxRetention()
                + " but topic '"
                + e.getKey()
                + "' keeps messages "
                + (topicMs < 0 ? "forever" : "for " + Duration.ofMillis(topicMs))
                + ": a message redelivered after its dedupe record was purged would be applied twice."
                + " Raise inboxRetention to at least the topic's retention.ms, or force it with"
                + " forceInboxRetention(true) if redelivery of old messages cannot happen.");
      }
    }
  }

  /**
   * The same rule for the idempotency store: a completed message id must be remembered as long as
   * the topic can deliver the message again.
   */
  private void checkIdempotencyTtl() {
    Map<String, Long> retention = KafkaTopics.retentionMillis(config, subscription.topics());
    for (Map.Entry<String, Long> e : retention.entrySet()) {
      long topicMs = e.getValue();
      boolean tooShort = topicMs < 0 || subscription.idempotencyTtl().toMillis() < topicMs;
      if (tooShort && !forceIdempotencyTtl) {
        throw new IdempotencyTtlTooShortException(
            "subscription '"
                + subscription.name()
                + "' keeps completed message ids for "
                + subscription.idempotencyTtl()
                + " but topic '"
                + e.getKey()
                + "' keeps messages "
                + (topicMs < 0 ? "forever" : "for " + Duration.ofMillis(topicMs))
                + ": a message redelivered after its key expired would be applied twice."
                + " Raise idempotencyTtl to at least the topic's retention.ms, or force it with"
                + " forceIdempotencyTtl(true) if redelivery of old messages cannot happen.");
      }
    }
  }

  /** Delayed retries of parked keys, off the poll thread and off the hot path. */
  private void unparkLoop() {
    while (running) {
      try {
        if (processor.drainParked(() -> running) == 0) {
          Thread.sleep(200);
        }
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        log.warn("{}: retrying parked messages failed; will retry", subscription.name(), e);
        try {
          Thread.sleep(1_000);
        } catch (InterruptedException ie) {
          return;
        }
      }
    }
  }

  private void purgeLoop() {
    InboxStore store = inbox.orElseThrow();
    while (running) {
      try {
        int n;
        do {
          n = store.purge(subscription.name(), subscription.inboxRetention(), 10_000);
        } while (n == 10_000 && running);
        Thread.sleep(inboxPurgeInterval);
      } catch (InterruptedException e) {
        return;
      } catch (RuntimeException e) {
        log.warn("{}: inbox purge failed; will retry", subscription.name(), e);
        try {
          Thread.sleep(inboxPurgeInterval);
        } catch (InterruptedException ie) {
          return;
        }
      }
    }
  }

  // ---------------------------------------------------------------- poll thread

  private void pollLoop() {
    try {
      fence.started();
      consumer.subscribe(subscription.topics(), new Rebalance());
      while (running) {
        Duration timeout = POLL_TIMEOUT;
        if (pauses.allPaused()) {
          // Wait for the workers to make room rather than for the poll to time out: a paused
          // consumer returns nothing, so a blocking poll would idle the workers once they drained.
          inFlight.awaitResumable(POLL_TIMEOUT);
          applyBackPressure();
        }
        if (pauses.allPaused()) {
          timeout = Duration.ZERO; // still full: just keep the group protocol going
        } else if (somePaused) {
          timeout = PARTLY_PAUSED_POLL_TIMEOUT; // notice soon when a paused partition has room
        }
        ConsumerRecords<byte[], byte[]> records = consumer.poll(timeout);
        health.polled();
        boolean verify = fence.polled();
        if (!records.isEmpty()) {
          processor.received(records.count());
          // at-most-once: a crash from here on loses these records, never repeats them; a
          // commit that failed (a rebalance) skips them: they are read again, not handled twice
          if (subscription.guarantee() != DeliveryGuarantee.AT_MOST_ONCE
              || preCommit.commit(records)) {
            dispatch(records);
          }
        }
        if (verify) {
          verifyMembership(); // after dispatch: the trackers hold what this poll returned
        }
        applyBackPressure();
        commitFinished(false);
        gauges.sampleLag(consumer::currentLag);
      }
      shutdown();
      health.ended(Optional.empty());
    } catch (WakeupException e) {
      shutdown();
      health.ended(Optional.empty());
    } catch (RuntimeException | Error e) {
      log.error(
          "{}: poll loop failed; the consumer is closed and this subscriber consumes nothing more"
              + " (state().alive() is false)",
          subscription.name(),
          e);
      health.ended(Optional.of(e));
      closing = true;
      try {
        consumer.close(Duration.ofSeconds(5));
      } catch (RuntimeException ignored) {
        // already failing
      }
      if (e instanceof Error err) {
        throw err;
      }
    } finally {
      stopped.countDown();
    }
  }

  /**
   * The poll loop stalled longer than the fence allows (a process pause, a long rebalance): proves
   * this member still belongs to the group before workers start more records, with a synchronous
   * commit of offsets that are safe to commit (the lowest unfinished record, or the fetch position
   * of a partition with nothing dispatched). The coordinator rejects it from a member of an older
   * generation; the consumer then rejoins in its next poll, where the lost partitions' trackers are
   * revoked and their records never start here. Poll thread only.
   */
  private void verifyMembership() {
    if (subscription.guarantee() == DeliveryGuarantee.AT_MOST_ONCE) {
      fence.verified(); // offsets were committed before handling: a zombie cannot duplicate
      return;
    }
    try {
      Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
      for (TopicPartition tp : consumer.assignment()) {
        OffsetTracker t = trackers.get(tp);
        OptionalLong c = t == null ? OptionalLong.empty() : t.committable();
        long offset = c.isPresent() ? c.getAsLong() : consumer.position(tp, VERIFY_TIMEOUT);
        offsets.put(tp, new OffsetAndMetadata(offset));
      }
      if (!offsets.isEmpty()) {
        consumer.commitSync(offsets, VERIFY_TIMEOUT);
        offsets.forEach((tp, o) -> committed.put(tp, o.offset()));
      }
      fence.verified();
      log.info(
          "{}: poll loop stalled; group membership confirmed for {}",
          subscription.name(),
          offsets.keySet());
    } catch (WakeupException e) {
      throw e;
    } catch (RuntimeException e) {
      log.warn(
          "{}: poll loop stalled and membership not confirmed ({}); records wait for the group",
          subscription.name(),
          e.toString());
    }
  }

  /** Whether a worker may (still) work on a record of {@code tracker}'s partition. */
  private BooleanSupplier owned(OffsetTracker tracker) {
    if (subscription.guarantee() == DeliveryGuarantee.AT_MOST_ONCE) {
      return () -> !closing && !tracker.revoked();
    }
    return () ->
        !closing && fence.awaitFresh(() -> closing || tracker.revoked()) && !tracker.revoked();
  }

  private void shutdown() {
    closing = true; // unstarted records are dropped, retries stop
    consumer.pause(consumer.assignment());
    long deadline = System.nanoTime() + subscription.shutdownTimeout().toNanos();
    while (inFlight.get() > 0 && System.nanoTime() < deadline) {
      consumer.poll(
          Duration.ofMillis(50)); // paused: keeps the membership alive while records finish
      commitFinished(false);
    }
    commitFinished(true);
    consumer.close(Duration.ofSeconds(10));
  }

  private void dispatch(ConsumerRecords<byte[], byte[]> records) {
    for (TopicPartition tp : records.partitions()) {
      OffsetTracker tracker = trackers.computeIfAbsent(tp, k -> new OffsetTracker());
      AtomicInteger partitionCount =
          partitionInFlight.computeIfAbsent(tp, k -> new AtomicInteger());
      List<ConsumerRecord<byte[], byte[]>> rs = records.records(tp);
      if (subscription.batchSize() > 1) {
        for (int i = 0; i < rs.size(); i += subscription.batchSize()) {
          List<ConsumerRecord<byte[], byte[]>> chunk =
              rs.subList(i, Math.min(rs.size(), i + subscription.batchSize()));
          chunk.forEach(r -> tracker.dispatched(r.offset(), r.timestamp()));
          inFlight.dispatched(chunk.size());
          partitionCount.addAndGet(chunk.size());
          List<ConsumerRecord<byte[], byte[]>> copy = List.copyOf(chunk);
          executor.submit(tp, () -> runBatch(tracker, partitionCount, copy));
        }
      } else {
        for (ConsumerRecord<byte[], byte[]> r : rs) {
          tracker.dispatched(r.offset(), r.timestamp());
          inFlight.dispatched(1);
          partitionCount.incrementAndGet();
          executor.submit(lane(tp, r), () -> runOne(tracker, partitionCount, r));
        }
      }
    }
  }

  private Object lane(TopicPartition tp, ConsumerRecord<byte[], byte[]> r) {
    return switch (subscription.ordering()) {
      case UNORDERED -> null;
      case PARTITION -> tp;
      case KEY -> r.key() == null ? tp : new KeyLane(tp, ByteBuffer.wrap(r.key()));
    };
  }

  private record KeyLane(TopicPartition partition, ByteBuffer key) {}

  private void runOne(
      OffsetTracker tracker, AtomicInteger partitionCount, ConsumerRecord<byte[], byte[]> r) {
    try {
      if (closing || !tracker.tryStart()) {
        processor.abandoned(1);
        return;
      }
      boolean finished = false;
      try {
        finished = processor.process(incoming(r), owned(tracker));
      } catch (RuntimeException e) {
        log.error("{}: unexpected failure at {}", subscription.name(), position(r), e);
      } finally {
        tracker.ended(r.offset(), finished);
      }
    } finally {
      partitionCount.decrementAndGet();
      inFlight.finished(1);
    }
  }

  private void runBatch(
      OffsetTracker tracker,
      AtomicInteger partitionCount,
      List<ConsumerRecord<byte[], byte[]>> rs) {
    try {
      if (closing || !tracker.tryStart()) {
        processor.abandoned(rs.size());
        return;
      }
      boolean finished = false;
      try {
        List<Incoming> batch = new ArrayList<>(rs.size());
        rs.forEach(r -> batch.add(incoming(r)));
        finished = processor.processBatch(batch, owned(tracker));
      } catch (RuntimeException e) {
        log.error(
            "{}: unexpected batch failure at {}", subscription.name(), position(rs.get(0)), e);
      } finally {
        // A batch is one unit: started once, ended once; its offsets finish together.
        tracker.ended(rs.stream().map(ConsumerRecord::offset).toList(), finished);
      }
    } finally {
      partitionCount.addAndGet(-rs.size());
      inFlight.finished(rs.size());
    }
  }

  private static Incoming incoming(ParkingStore.ParkedRecord p) {
    return incoming(
        StoredRecords.rebuild(
            p.topic(),
            p.partition(),
            p.offset(),
            ConsumerRecord.NO_TIMESTAMP,
            p.key(),
            p.value(),
            p.headers()));
  }

  private static Incoming incoming(ConsumerRecord<byte[], byte[]> r) {
    List<DeadLetterStore.Header> headers = new ArrayList<>();
    for (Header h : r.headers()) {
      headers.add(new DeadLetterStore.Header(h.key(), h.value()));
    }
    return new Incoming(
        r.topic(),
        r.partition(),
        r.offset(),
        () -> KafkaRecords.fromRecord(r),
        r.key(),
        r.value(),
        List.copyOf(headers));
  }

  private static String position(ConsumerRecord<?, ?> r) {
    return r.topic() + "-" + r.partition() + "@" + r.offset();
  }

  private void applyBackPressure() {
    Map<TopicPartition, Integer> unfinished = new HashMap<>();
    for (TopicPartition tp : consumer.assignment()) {
      AtomicInteger n = partitionInFlight.get(tp);
      unfinished.put(tp, n == null ? 0 : n.get());
    }
    Set<TopicPartition> pausedNow = consumer.paused();
    Set<TopicPartition> wanted = pauses.decide(inFlight, unfinished, pausedNow);
    List<TopicPartition> pause = new ArrayList<>();
    for (TopicPartition tp : wanted) {
      if (!pausedNow.contains(tp)) {
        pause.add(tp);
      }
    }
    List<TopicPartition> resume = new ArrayList<>();
    for (TopicPartition tp : pausedNow) {
      if (!wanted.contains(tp)) {
        resume.add(tp);
      }
    }
    if (!pause.isEmpty()) {
      consumer.pause(pause);
    }
    if (!resume.isEmpty()) {
      consumer.resume(resume);
    }
    somePaused = !wanted.isEmpty();
  }

  /** Commits the finished prefix of every partition that advanced. Poll thread only. */
  private void commitFinished(boolean sync) {
    if (subscription.guarantee() == DeliveryGuarantee.AT_MOST_ONCE) {
      return;
    }
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    trackers.forEach((tp, tracker) -> {
      OptionalLong c = tracker.committable();
      if (c.isPresent() && c.getAsLong() > committed.getOrDefault(tp, -1L)) {
        offsets.put(tp, new OffsetAndMetadata(c.getAsLong()));
      }
    });
    commit(offsets, sync);
  }

  private void commit(Map<TopicPartition, OffsetAndMetadata> offsets, boolean sync) {
    if (offsets.isEmpty()) {
      return;
    }
    offsets.forEach((tp, o) -> committed.put(tp, o.offset()));
    if (sync) {
      try {
        consumer.commitSync(offsets, SYNC_COMMIT_TIMEOUT);
      } catch (RuntimeException e) {
        offsets.keySet().forEach(committed::remove);
        log.warn(
            "{}: offset commit failed (will be redelivered): {}",
            subscription.name(),
            e.toString());
      }
    } else {
      consumer.commitAsync(
          offsets,
          (done, error) -> {
            if (error != null) {
              offsets.keySet().forEach(committed::remove); // retried with the next commit
            }
          });
    }
  }

  /** Rebalance callbacks; Kafka runs them on the poll thread, inside {@code poll}. */
  private final class Rebalance implements ConsumerRebalanceListener {
    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
      Map<TopicPartition, OffsetTracker> revoked = new HashMap<>();
      for (TopicPartition tp : partitions) {
        OffsetTracker tracker = trackers.get(tp);
        if (tracker != null) {
          revoked.put(tp, tracker);
        }
      }
      log.info("{}: revoked {}", subscription.name(), partitions);
      try {
        // every revoked partition is marked before any wait: none starts a record from here on
        Map<TopicPartition, Integer> left =
            new PartitionRevocation(subscription.shutdownTimeout(), System::nanoTime)
                .revoke(revoked);
        if (!left.isEmpty()) {
          log.warn("{}: records still running at revocation: {}", subscription.name(), left);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
      revoked.forEach((tp, tracker) -> {
        OptionalLong c = tracker.committable();
        if (c.isPresent() && c.getAsLong() > committed.getOrDefault(tp, -1L)) {
          offsets.put(tp, new OffsetAndMetadata(c.getAsLong()));
        }
      });
      if (!partitions.isEmpty()) {
        // in-flight work of the revoked partitions is finished, its offsets not committed yet
        CrashPoints.hit("consumer.during-rebalance");
      }
      if (subscription.guarantee() != DeliveryGuarantee.AT_MOST_ONCE) {
        commit(offsets, true);
      }
      forget(partitions);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      log.info(
          "{}: lost {} (another member may own them already)", subscription.name(), partitions);
      for (TopicPartition tp : partitions) {
        OffsetTracker tracker = trackers.get(tp);
        if (tracker != null) {
          try {
            tracker.revokeAndAwait(Duration.ZERO);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
      forget(partitions); // no commit: another member may already own them
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
      if (pauses.allPaused()) {
        consumer.pause(partitions);
      }
      assignment = Set.copyOf(consumer.assignment());
      gauges.assigned(partitions);
      log.info("{}: assigned {} (now owns {})", subscription.name(), partitions, assignment.size());
    }

    private void forget(Collection<TopicPartition> partitions) {
      for (TopicPartition tp : partitions) {
        trackers.remove(tp);
        partitionInFlight.remove(tp);
        committed.remove(tp);
      }
      assignment = Set.copyOf(consumer.assignment());
    }
  }

  /** Builds a {@link KafkaSubscriber}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final Subscription subscription;
    private final Map<String, Object> config = new HashMap<>();
    private MessageHandler handler;
    private BatchHandler batchHandler;
    private InboxStore inbox;
    private IdempotencyStore idempotencyStore;
    private DuplicateListener onDuplicate = DuplicateListener.ignore();
    private boolean forceIdempotencyTtl = DEFAULT_FORCE_IDEMPOTENCY_TTL;
    private DeadLetterStore deadLetters;
    private ParkingStore parking;
    private List<Duration> parkingTiers = DEFAULT_PARKING_TIERS;
    private boolean blockKeyAfterDeadLetter = DEFAULT_BLOCK_KEY_AFTER_DEAD_LETTER;
    private List<Duration> retryTiers;
    private java.time.Clock clock = java.time.Clock.systemUTC();
    private boolean forceInboxRetention = DEFAULT_FORCE_INBOX_RETENTION;
    private Duration inboxPurgeInterval = DEFAULT_INBOX_PURGE_INTERVAL;
    private PostboxMetrics metrics = PostboxMetrics.noop();
    private io.opentelemetry.api.OpenTelemetry openTelemetry;

    private Builder(String bootstrapServers, Subscription subscription) {
      Objects.requireNonNull(bootstrapServers, "bootstrapServers");
      this.subscription = Objects.requireNonNull(subscription, "subscription");
      config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
      config.putAll(DEFAULT_CONSUMER_PROPERTIES);
      config.put(ConsumerConfig.CLIENT_ID_CONFIG, "postbox-" + subscription.name());
    }

    /** Sets the handler for one message at a time. */
    public Builder handler(MessageHandler handler) {
      this.handler = Objects.requireNonNull(handler, "handler");
      return this;
    }

    /** Sets a batch handler (used when the subscription's batch size is above 1). */
    public Builder batchHandler(BatchHandler batchHandler) {
      this.batchHandler = Objects.requireNonNull(batchHandler, "batchHandler");
      return this;
    }

    /** Sets the inbox (required for {@code EFFECTIVELY_ONCE}). */
    public Builder inbox(InboxStore inbox) {
      this.inbox = Objects.requireNonNull(inbox, "inbox");
      return this;
    }

    /**
     * Sets the idempotency store (required for {@code DEDUPLICATED}, for example {@code
     * RedisIdempotencyStore}): each message id is claimed with the subscription's lease before the
     * handler runs and completed with the handler's {@linkplain
     * dev.postbox.core.consumer.Delivery#recordResult recorded result} and the subscription's TTL
     * after it; a failing handler releases the lease so its retry can claim it.
     */
    public Builder idempotencyStore(IdempotencyStore store) {
      this.idempotencyStore = Objects.requireNonNull(store, "store");
      return this;
    }

    /**
     * Receives the {@code DEDUPLICATED} duplicates with their stored results (default: ignored,
     * still counted as duplicates suppressed).
     */
    public Builder onDuplicate(DuplicateListener listener) {
      this.onDuplicate = Objects.requireNonNull(listener, "listener");
      return this;
    }

    /**
     * Allows an idempotency TTL shorter than a topic's {@code retention.ms} (default false: {@link
     * #start()} refuses it). Only safe when old messages can never be delivered again.
     */
    public Builder forceIdempotencyTtl(boolean force) {
      this.forceIdempotencyTtl = force;
      return this;
    }

    /**
     * Keeps every given-up record (permanent failures at their first attempt, others when retries
     * run out) in {@code store}, byte-identical, before its offset may be committed (default: none;
     * given-up records are only logged).
     */
    public Builder deadLetters(DeadLetterStore store) {
      this.deadLetters = Objects.requireNonNull(store, "store");
      return this;
    }

    /**
     * Turns on ordered parking (default: off; in-place retries then dead letters): a message whose
     * in-place retries ran out for a transient failure is parked with every later message of its
     * key, in order, and retried as a sequence after the delay tiers, while other keys flow on.
     * Needs KEY or PARTITION ordering.
     */
    public Builder parking(ParkingStore store) {
      this.parking = Objects.requireNonNull(store, "store");
      return this;
    }

    /**
     * Sets the delays of the parked retries (default 10 s, 1 min, 10 min); after the last the head
     * is dead-lettered.
     */
    public Builder parkingTiers(Duration... tiers) {
      if (tiers.length == 0) {
        throw new IllegalArgumentException("at least one parking tier is required");
      }
      for (Duration t : tiers) {
        if (t.isNegative()) {
          throw new IllegalArgumentException("parking tiers must not be negative: " + t);
        }
      }
      this.parkingTiers = List.of(tiers);
      return this;
    }

    /**
     * Turns on retry topics, the alternative to {@link #parking ordered parking} (default: off): a
     * message whose in-place retries ran out for a transient failure is produced, byte-identical
     * with {@code pb_retry_*} headers (attempt, first failure, error, origin, due time), to {@code
     * <topic>.retry.1} before its offset may be committed, and retried from there by an internal
     * consumer (group {@code <subscription>.retry}) after {@code tiers[0]}, then from {@code
     * .retry.2} after {@code tiers[1]}...; after the last tier it goes to {@code <topic>.dlt} (and
     * to the dead-letter store, if any). Missing retry and dead-letter topics are created at start
     * with the partition count of their topic.
     *
     * <p><b>Order is not kept:</b> a retried message is applied after later messages of its key,
     * which flow on meanwhile. Use {@link #parking} when order matters.
     *
     * <p>Retry headers are trusted only on records read from these retry topics, and even there the
     * tier is the topic's, and a due time is never later than now plus the tier's delay.
     */
    public Builder retryTopics(Duration... tiers) {
      if (tiers.length == 0) {
        throw new IllegalArgumentException("at least one retry tier is required");
      }
      for (Duration t : tiers) {
        if (t.isNegative()) {
          throw new IllegalArgumentException("retry tiers must not be negative: " + t);
        }
      }
      this.retryTiers = List.of(tiers);
      return this;
    }

    /**
     * What the rest of a parked key does when its head is dead-lettered: wait for an operator
     * ({@code true}: block) or go on, with the gap recorded in the dead letters ({@code false}, the
     * default: skip).
     */
    public Builder blockKeyAfterDeadLetter(boolean block) {
      this.blockKeyAfterDeadLetter = block;
      return this;
    }

    /**
     * Sets where the subscriber reports its metrics (default: {@link PostboxMetrics#noop()}):
     * {@code postbox.consumer.*} per group, topic and partition (processed, failed, retried,
     * dead-lettered, duplicates suppressed, stale skipped, unknown types, parked, the age of the
     * oldest unprocessed record, the offset lag) and per topic the handler and end-to-end time.
     */
    public Builder metrics(PostboxMetrics metrics) {
      this.metrics = Objects.requireNonNull(metrics, "metrics");
      return this;
    }

    /**
     * Sets the OpenTelemetry that makes the processing spans (default: {@code
     * GlobalOpenTelemetry.get()}, a no-op until an SDK is installed). Each processing attempt is
     * one CONSUMER span, a child of the trace context the message carries, current while the
     * handler runs (so messages the handler writes to the outbox continue the trace).
     */
    public Builder openTelemetry(io.opentelemetry.api.OpenTelemetry openTelemetry) {
      this.openTelemetry = Objects.requireNonNull(openTelemetry, "openTelemetry");
      return this;
    }

    /** Sets the clock for failure times (default: system UTC). */
    public Builder clock(java.time.Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Allows an inbox retention shorter than a topic's {@code retention.ms} (default false: {@link
     * #start()} refuses it). Only safe when old messages can never be delivered again.
     */
    public Builder forceInboxRetention(boolean force) {
      this.forceInboxRetention = force;
      return this;
    }

    /** Sets how often dedupe records older than the inbox retention are purged (default 10 min). */
    public Builder inboxPurgeInterval(Duration interval) {
      Objects.requireNonNull(interval, "interval");
      if (interval.isNegative() || interval.isZero()) {
        throw new IllegalArgumentException("inboxPurgeInterval must be positive");
      }
      this.inboxPurgeInterval = interval;
      return this;
    }

    /** Sets a consumer property; {@code group.id} and {@code enable.auto.commit} are fixed. */
    public Builder consumerProperty(String name, Object value) {
      if (name.equals(ConsumerConfig.GROUP_ID_CONFIG)
          || name.equals(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG)) {
        throw new IllegalArgumentException(
            name + " is fixed (group.id = subscription name; offsets are committed by Postbox)");
      }
      config.put(name, Objects.requireNonNull(value, "value"));
      return this;
    }

    /** Validates and builds the subscriber (not yet started). */
    public KafkaSubscriber build() {
      if (subscription.batchSize() > 1 && batchHandler == null) {
        throw new IllegalArgumentException(
            "subscription '"
                + subscription.name()
                + "' has batchSize > 1 and needs a batchHandler");
      }
      if (subscription.batchSize() == 1 && handler == null) {
        throw new IllegalArgumentException(
            "subscription '" + subscription.name() + "' needs a handler");
      }
      if (subscription.guarantee() == DeliveryGuarantee.DEDUPLICATED && idempotencyStore == null) {
        throw new IllegalArgumentException(
            "subscription '"
                + subscription.name()
                + "' is DEDUPLICATED and needs an idempotencyStore");
      }
      if (subscription.guarantee() != DeliveryGuarantee.DEDUPLICATED && idempotencyStore != null) {
        throw new IllegalArgumentException(
            "subscription '"
                + subscription.name()
                + "' has an idempotencyStore but is "
                + subscription.guarantee()
                + "; use DEDUPLICATED");
      }
      if (parking != null && retryTiers != null) {
        throw new IllegalArgumentException(
            "subscription '"
                + subscription.name()
                + "': parking and retryTopics are alternatives; choose one");
      }
      return new KafkaSubscriber(this);
    }
  }
}
