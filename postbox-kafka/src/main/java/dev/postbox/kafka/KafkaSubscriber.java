package dev.postbox.kafka;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.BatchHandler;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.DuplicateListener;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.InboxJanitor;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.internal.ConsumerSettings;
import dev.postbox.kafka.internal.InFlightLimit;
import dev.postbox.kafka.internal.IncomingRecords;
import dev.postbox.kafka.internal.MembershipFence;
import dev.postbox.kafka.internal.OffsetCommitter;
import dev.postbox.kafka.internal.ParkedDrainer;
import dev.postbox.kafka.internal.PausePolicy;
import dev.postbox.kafka.internal.PollLoop;
import dev.postbox.kafka.internal.PollLoopHealth;
import dev.postbox.kafka.internal.RebalanceHandler;
import dev.postbox.kafka.internal.RecordDispatcher;
import dev.postbox.kafka.internal.SubscriberGauges;
import dev.postbox.kafka.internal.SubscriberPartitions;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
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
 *
 * <p>This class is the builder and the lifecycle (start, close); the work is done in {@code
 * dev.postbox.kafka.internal}: {@link ConsumerSettings} (the consumer's properties), {@link
 * PollLoop} (the poll thread), {@link RecordDispatcher} (records to workers), {@link
 * OffsetCommitter} (commits and the membership proof), {@link RebalanceHandler}, {@link
 * SubscriberGauges} and {@link ParkedDrainer} (the unpark thread); the purge thread is the engine's
 * {@link InboxJanitor}.
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

  private final Subscription subscription;
  private final DeliveryProcessor processor;
  private final Map<String, Object> config;
  private final KeyedExecutor executor;
  private final SubscriberPartitions partitions = new SubscriberPartitions();
  private final InFlightLimit inFlight;
  private final PausePolicy pauses;
  private final MembershipFence fence;
  private final PollLoopHealth health;
  private final SubscriberGauges gauges;
  private final Ticker ticker;
  private final Sleeper sleeper;
  private final Optional<InboxStore> inbox;
  private final boolean forceInboxRetention;
  private final boolean forceIdempotencyTtl;
  private final Duration inboxPurgeInterval;
  private final boolean parkingEnabled;
  private final KafkaRetryTopics retryTopics;
  private volatile boolean running;
  private PollLoop pollLoop;
  private Thread pollThread;
  private Thread purgeThread;
  private Thread unparkThread;

  private KafkaSubscriber(Builder b) {
    this.subscription = b.subscription;
    this.ticker = b.ticker;
    this.sleeper = b.sleeper;
    this.inbox = Optional.ofNullable(b.inbox);
    this.forceInboxRetention = b.forceInboxRetention;
    this.forceIdempotencyTtl = b.forceIdempotencyTtl;
    this.inboxPurgeInterval = b.inboxPurgeInterval;
    this.retryTopics =
        b.retryTiers == null
            ? null
            : new KafkaRetryTopics(
                b.subscription.name(),
                b.subscription.topics(),
                b.retryTiers,
                b.config,
                b.clock,
                b.sleeper);
    this.processor = deliveryProcessor(b, Optional.ofNullable(retryTopics));
    this.parkingEnabled = b.parking != null;
    this.config = ConsumerSettings.forSubscription(b.config, subscription);
    this.fence =
        new MembershipFence(
            subscription.name(), MembershipFence.thresholdFor(config), ticker::nanos);
    this.health = new PollLoopHealth(b.clock);
    this.gauges =
        new SubscriberGauges(
            b.metrics, subscription.name(), b.clock, partitions::assignment, partitions.trackers());
    this.inFlight = new InFlightLimit(subscription.maxInFlight());
    boolean serial = subscription.batchSize() > 1 || subscription.ordering() == Ordering.PARTITION;
    this.pauses =
        new PausePolicy(subscription.maxInFlight(), serial ? 2 * subscription.batchSize() : 0);
    this.executor = new KeyedExecutor("postbox-" + subscription.name(), subscription.concurrency());
  }

  /** The engine's processor for the builder's subscription: the one place it is constructed. */
  private static DeliveryProcessor deliveryProcessor(
      Builder b, Optional<DeliveryProcessor.RetriesExhausted> retryTopics) {
    return new DeliveryProcessor(
        KafkaBinding.TRANSPORT,
        b.subscription,
        b.handler,
        b.batchHandler,
        Optional.ofNullable(b.inbox),
        b.idempotencyStore == null
            ? Optional.empty()
            : Optional.of(
                new DeliveryProcessor.Idempotency(b.idempotencyStore, b.onDuplicate, b.sleeper)),
        Optional.ofNullable(b.deadLetters),
        b.parking == null
            ? Optional.empty()
            : Optional.of(
                new DeliveryProcessor.Parking(
                    b.parking, b.parkingTiers, b.blockKeyAfterDeadLetter, IncomingRecords::of)),
        retryTopics,
        b.clock,
        b.ticker,
        b.sleeper,
        b.metrics,
        b.openTelemetry);
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
      RetentionChecks.checkInboxRetention(config, subscription, forceInboxRetention);
    }
    if (subscription.guarantee() == DeliveryGuarantee.DEDUPLICATED) {
      RetentionChecks.checkIdempotencyTtl(config, subscription, forceIdempotencyTtl);
    }
    if (retryTopics != null) {
      retryTopics.open(processor);
    }
    pollLoop =
        pollLoop(
            new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer()));
    running = true;
    health.started();
    gauges.health(health::alive, this::fenced);
    if (retryTopics != null) {
      retryTopics.start();
    }
    String name = subscription.name();
    if (parkingEnabled) {
      unparkThread =
          Thread.ofVirtual()
              .name("postbox-unpark-" + name)
              .start(new ParkedDrainer(name, processor::drainParked, sleeper, () -> running));
    }
    if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      purgeThread =
          Thread.ofVirtual()
              .name("postbox-inbox-purge-" + name)
              .start(
                  new InboxJanitor(
                      inbox.orElseThrow(),
                      name,
                      subscription.inboxRetention(),
                      inboxPurgeInterval,
                      sleeper,
                      () -> running));
    }
    pollThread = Thread.ofPlatform().name("postbox-poll-" + name).start(pollLoop);
  }

  /** Wires the poll loop's parts around {@code consumer}. */
  private PollLoop pollLoop(KafkaConsumer<byte[], byte[]> consumer) {
    boolean atMostOnce = subscription.guarantee() == DeliveryGuarantee.AT_MOST_ONCE;
    OffsetCommitter committer =
        new OffsetCommitter(consumer, subscription.name(), atMostOnce, partitions.trackers());
    RebalanceHandler rebalance =
        new RebalanceHandler(
            subscription.name(),
            subscription.shutdownTimeout(),
            ticker,
            consumer,
            partitions,
            committer,
            pauses::allPaused,
            gauges);
    RecordDispatcher dispatcher =
        new RecordDispatcher(subscription, processor, executor, partitions, inFlight, fence);
    return new PollLoop(
        new PollLoop.Parts(
            subscription,
            consumer,
            processor,
            dispatcher,
            committer,
            rebalance,
            partitions,
            inFlight,
            pauses,
            fence,
            health,
            gauges,
            ticker),
        () -> running);
  }

  /** Counters since start. */
  public ConsumerStats stats() {
    return processor.stats();
  }

  /** Partitions currently assigned to this instance. */
  public Set<TopicPartition> assignment() {
    return partitions.assignment();
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
        partitions.assignment(),
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
      pollLoop.awaitEnd();
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

  /** Builds a {@link KafkaSubscriber}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final Subscription subscription;
    private final Map<String, Object> config;
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
    private Ticker ticker = Ticker.SYSTEM;
    private Sleeper sleeper = Sleeper.SYSTEM;

    private Builder(String bootstrapServers, Subscription subscription) {
      Objects.requireNonNull(bootstrapServers, "bootstrapServers");
      this.subscription = Objects.requireNonNull(subscription, "subscription");
      this.config = new HashMap<>(ConsumerSettings.defaults(bootstrapServers, subscription.name()));
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
      ConsumerSettings.checkSettable(name);
      config.put(name, Objects.requireNonNull(value, "value"));
      return this;
    }

    /**
     * Sets the monotonic time and the sleeping of the subscriber's loops (default: the system's);
     * for tests, which pass a {@code FakeTime}. Not an API.
     */
    Builder time(Ticker ticker, Sleeper sleeper) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
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
