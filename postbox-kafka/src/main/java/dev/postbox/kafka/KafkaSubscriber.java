package dev.postbox.kafka;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.OrderedSubscriberBuilder;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.spi.OffsetStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.internal.AssignmentListener;
import dev.postbox.kafka.internal.ConsumerSettings;
import dev.postbox.kafka.internal.OffsetCommitter;
import dev.postbox.kafka.internal.PollLoop;
import dev.postbox.kafka.internal.PollLoopHealth;
import dev.postbox.kafka.internal.RebalanceHandler;
import dev.postbox.kafka.internal.RecordDispatcher;
import dev.postbox.kafka.internal.StoredOffsetSeek;
import dev.postbox.kafka.internal.SubscriberGauges;
import dev.postbox.kafka.internal.SubscriberRuntime;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.GroupProtocol;
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
 *   <li><b>Back-pressure.</b> Above {@code maxInFlight} unfinished records the partitions pause
 *       ({@link PausePolicy}); the poll loop never blocks on handlers, so the consumer stays in its
 *       group.
 *   <li><b>Rebalances</b> (cooperative-sticky by default). On revocation, records of the partition
 *       that have not started are dropped, running ones may finish within the shutdown timeout, and
 *       the finished prefix is committed; anything else is redelivered to the new owner (and
 *       absorbed by the inbox).
 *   <li><b>Shutdown.</b> {@link #close()} stops reading, lets running records finish within the
 *       shutdown timeout, commits and closes.
 * </ul>
 *
 * <p>The consumer's defaults and derived properties are {@link ConsumerSettings}'. Thread-safe.
 *
 * <p>This class is the builder and the lifecycle (start, close); the work is done in {@code
 * dev.postbox.kafka.internal}: {@link ConsumerSettings} (the consumer's properties), {@link
 * PollLoop} (the poll thread), {@link RecordDispatcher} (records to workers), {@link
 * OffsetCommitter} (commits and the membership proof), {@link RebalanceHandler}, {@link
 * SubscriberGauges}, all wired by {@link SubscriberRuntime}; {@link KafkaSubscriberSettings} holds
 * the defaults and validation, {@link SideThreads} the unpark and purge threads.
 */
public final class KafkaSubscriber implements AutoCloseable {

  /**
   * Consumer properties set by default, before {@link Builder#consumerProperty} (which may override
   * them): {@code isolation.level=read_committed}, {@code auto.offset.reset=earliest},
   * cooperative-sticky assignment, {@code metadata.max.age.ms=10000} (so that a partition whose
   * leader was cut off from the other brokers is fetched from the new leader within seconds, not
   * after Kafka's 5 minutes).
   */
  public static final Map<String, Object> DEFAULT_CONSUMER_PROPERTIES =
      KafkaSubscriberSettings.DEFAULT_CONSUMER_PROPERTIES;

  /** Default: an inbox retention shorter than a topic's retention is refused at start. */
  public static final boolean DEFAULT_FORCE_INBOX_RETENTION =
      KafkaSubscriberSettings.DEFAULT_FORCE_INBOX_RETENTION;

  /** Default: an idempotency TTL shorter than a topic's retention is refused at start. */
  public static final boolean DEFAULT_FORCE_IDEMPOTENCY_TTL =
      KafkaSubscriberSettings.DEFAULT_FORCE_IDEMPOTENCY_TTL;

  /** Default group protocol: {@code CLASSIC}, with the cooperative-sticky assignor. */
  public static final GroupProtocol DEFAULT_GROUP_PROTOCOL =
      KafkaSubscriberSettings.DEFAULT_GROUP_PROTOCOL;

  private static final Logger log = LoggerFactory.getLogger(KafkaSubscriber.class);

  private final Subscription subscription;
  private final KafkaSubscriberSettings settings;
  private final DeliveryProcessor processor;
  private final Map<String, Object> config;
  private final SubscriberRuntime runtime;
  private final KafkaRetryTopics retryTopics;
  private volatile boolean running;
  private PollLoop pollLoop;
  private Thread pollThread;
  private SideThreads sideThreads;

  private KafkaSubscriber(KafkaSubscriberSettings b) {
    this.subscription = b.subscription();
    this.settings = b;
    this.retryTopics =
        b.retryTiers()
            .map(tiers ->
                new KafkaRetryTopics(
                    subscription.name(),
                    subscription.topics(),
                    tiers,
                    b.config(),
                    b.clock(),
                    b.sleeper()))
            .orElse(null);
    this.processor = b.deliveryProcessor(Optional.ofNullable(retryTopics));
    this.config = ConsumerSettings.forSubscription(b.config(), subscription);
    this.runtime =
        new SubscriberRuntime(subscription, processor, config, b.metrics(), b.clock(), b.ticker());
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
   * @throws KafkaAccessDeniedException when the consumer is configured with security (SASL or SSL)
   *     and the cluster refuses its credentials or the TLS handshake fails
   */
  public synchronized void start() {
    if (pollThread != null) {
      throw new IllegalStateException("already started");
    }
    AccessCheck.check(config, "subscription '" + subscription.name() + "'");
    if (settings.inbox().isPresent()) {
      RetentionChecks.checkInboxRetention(config, subscription, settings.forceInboxRetention());
    }
    if (subscription.guarantee() == DeliveryGuarantee.DEDUPLICATED) {
      RetentionChecks.checkIdempotencyTtl(config, subscription, settings.forceIdempotencyTtl());
    }
    if (retryTopics != null) {
      retryTopics.open(processor);
    }
    pollLoop =
        runtime.pollLoop(
            new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer()),
            settings
                .offsetStore()
                .<AssignmentListener>map(
                    o -> new StoredOffsetSeek(o, subscription.name(), settings.sleeper()))
                .orElse(AssignmentListener.NONE),
            () -> running);
    running = true;
    runtime.health().started();
    runtime.gauges().health(runtime.health()::alive, runtime::fenced);
    if (retryTopics != null) {
      retryTopics.start();
    }
    sideThreads = SideThreads.start(settings, processor, () -> running);
    pollThread = Thread.ofPlatform().name("postbox-poll-" + subscription.name()).start(pollLoop);
  }

  /** Counters since start. */
  public ConsumerStats stats() {
    return processor.stats();
  }

  /** Partitions currently assigned to this instance. */
  public Set<TopicPartition> assignment() {
    return runtime.partitions().assignment();
  }

  /** Records read and not yet finished. */
  public int inFlight() {
    return runtime.inFlight();
  }

  /**
   * What this subscriber is doing now: whether its poll loop runs (or why it died), its partitions,
   * whether records wait on the membership fence, when it last polled.
   */
  public SubscriberState state() {
    PollLoopHealth health = runtime.health();
    return new SubscriberState(
        running,
        health.alive(),
        health.failure(),
        assignment(),
        runtime.fenced(),
        health.lastPoll(),
        inFlight());
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
    sideThreads.stop(settings);
    runtime.executor().close();
    if (retryTopics != null) {
      retryTopics.close();
    }
    log.info("{} closed: {}", subscription.name(), stats());
  }

  /** Builds a {@link KafkaSubscriber}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder extends OrderedSubscriberBuilder<Builder> {
    private final KafkaSubscriberSettings.Builder settings;

    private Builder(String bootstrapServers, Subscription subscription) {
      this.settings = new KafkaSubscriberSettings.Builder(bootstrapServers, subscription);
    }

    /**
     * Keeps each partition's next offset in {@code store}, in the effect's transaction, instead of
     * an inbox row per message (the offsets-in-the-database mode; needs an {@code EFFECTIVELY_ONCE}
     * subscription with {@code PARTITION} ordering and batch size 1, no parking, no retry topics):
     * every assigned partition is sought to its stored offset, a record below it is skipped as a
     * duplicate, and Kafka's committed offsets (still committed, for lag) are never relied on.
     */
    public Builder offsetStore(OffsetStore store) {
      settings.offsetStore(store);
      return this;
    }

    /**
     * Sets Kafka's group protocol (default {@code CLASSIC}): {@code CONSUMER} is KIP-848's (brokers
     * 4.0+), where the broker assigns partitions incrementally and no rebalance stops the group;
     * the client-side assignor, session timeout and heartbeat interval are then the broker's
     * ({@code group.consumer.*}) and must not be set here.
     */
    public Builder groupProtocol(GroupProtocol protocol) {
      settings.groupProtocol(protocol);
      return this;
    }

    /**
     * Allows an idempotency TTL shorter than a topic's {@code retention.ms} (default false: {@link
     * #start()} refuses it). Only safe when old messages can never be delivered again.
     */
    public Builder forceIdempotencyTtl(boolean force) {
      settings.forceIdempotencyTtl(force);
      return this;
    }

    /**
     * Turns on retry topics, the alternative to {@link #parking ordered parking} (default: off): a
     * message whose in-place retries ran out for a transient failure is produced, byte-identical
     * with {@code pb_retry_*} headers (attempt, first failure, error, origin, due time,
     * subscription), to {@code <topic>.<subscription>.retry.1} before its offset may be committed,
     * and retried from there by an internal consumer (group {@code <subscription>.retry}) after
     * {@code tiers[0]}, then from {@code .retry.2} after {@code tiers[1]}...; after the last tier
     * it goes to {@code <topic>.<subscription>.dlt} (and to the dead-letter store, if any). The
     * topics are the subscription's own: another subscription of the topic never retries its
     * failures. Missing retry and dead-letter topics are created at start with the partition count
     * of their topic; the shared {@code <topic>.retry.<n>} topics of earlier versions are drained
     * if they exist (docs: Failures, "Upgrading").
     *
     * <p>{@code build()} fails when the subscription name is not legal in a topic name ({@code
     * [a-zA-Z0-9._-]}) or a retry topic's name would be longer than 249 characters.
     *
     * <p><b>Order is not kept:</b> a retried message is applied after later messages of its key,
     * which flow on meanwhile. Use {@link #parking} when order matters.
     *
     * <p>Retry headers are trusted only on records read from retry topics, and only within the
     * tier's delay.
     */
    public Builder retryTopics(Duration... tiers) {
      settings.retryTopics(tiers);
      return this;
    }

    /**
     * Allows an inbox retention shorter than a topic's {@code retention.ms} (default false: {@link
     * #start()} refuses it). Only safe when old messages can never be delivered again.
     */
    public Builder forceInboxRetention(boolean force) {
      settings.forceInboxRetention(force);
      return this;
    }

    /**
     * Authenticates and encrypts the connections (SASL_SSL with SCRAM), also of the retry topics'
     * clients. {@link KafkaSubscriber#start()} then checks that the cluster accepts the credentials
     * and fails with {@link KafkaAccessDeniedException} if not. The properties it stands for
     * ({@link KafkaSecurity#clientProperties()}) must not also be set with {@link
     * #consumerProperty}.
     */
    public Builder security(KafkaSecurity security) {
      settings.security(security);
      return this;
    }

    /** Sets a consumer property; {@code group.id} and {@code enable.auto.commit} are fixed. */
    public Builder consumerProperty(String name, Object value) {
      settings.consumerProperty(name, value);
      return this;
    }

    /**
     * Sets the monotonic time and the sleeping of the subscriber's loops (default: the system's);
     * for tests, which pass a {@code FakeTime}. Not an API.
     */
    Builder time(Ticker ticker, Sleeper sleeper) {
      return useTime(ticker, sleeper);
    }

    /** Validates and builds the subscriber (not yet started). */
    public KafkaSubscriber build() {
      settings.shared(common(), ordered());
      KafkaSubscriberSettings built = settings.build();
      checkIdempotencyStore(built.subscription());
      return new KafkaSubscriber(built);
    }
  }
}
