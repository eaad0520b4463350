package dev.postbox.rabbitmq;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.OrderedSubscriberBuilder;
import dev.postbox.core.consumer.SubscriberBuilder;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.ConsumerAgeReporter;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.spi.ConsumerAgeStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.ShardLeaseStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.rabbitmq.internal.Housekeeping;
import dev.postbox.rabbitmq.internal.InFlight;
import dev.postbox.rabbitmq.internal.RecoveryRetries;
import dev.postbox.rabbitmq.internal.ShardConsumer;
import dev.postbox.rabbitmq.internal.SubscriptionShards;
import dev.postbox.rabbitmq.internal.UnfinishedAges;
import dev.postbox.rabbitmq.internal.WaitQueues;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes a {@link Subscription} from RabbitMQ on the core consumer engine, with its delivery
 * guarantee, ordering and concurrency.
 *
 * <ul>
 *   <li><b>Topology.</b> At {@link #start()} it declares, for each topic, the topic's exchange, the
 *       subscription's direct exchange and shard queues ({@link RabbitTopology}: quorum queues with
 *       single active consumer, or for {@code UNORDERED} without it), and consumes every shard
 *       queue on a channel of its own. Any number of instances can run: for a key-ordered
 *       subscription each shard is consumed by one of them at a time (the first to subscribe; the
 *       others stand by), and with {@link Builder#shardLeases} the instances share the shards
 *       instead (about shards/instances each, handed over in order when one joins or leaves);
 *       {@link #heldShards()} says which this one consumes. The instances of an {@code UNORDERED}
 *       subscription are competing consumers of every shard queue (each up to its prefetch), so
 *       each added instance takes a share of the work; shard leases are not used for them.
 *   <li><b>Acks.</b> Manual: a delivery is acked when the engine finished it (applied, suppressed,
 *       ignored or dead-lettered); {@code AT_MOST_ONCE} acks before handling; for {@code
 *       EFFECTIVELY_ONCE} the inbox row commits with the effect, before the ack, so a redelivery
 *       (after a crash, a lost connection, a restart) is suppressed by the inbox; for {@code
 *       DEDUPLICATED} ({@link Builder#idempotencyStore}, e.g. Redis) the message id is claimed with
 *       a lease before the handler and completed after it, before the ack, so a redelivery of a
 *       completed message is suppressed, and one that arrives while the lease is held (the broker
 *       requeued the deliveries of a crashed consumer or a lost channel while the handler still
 *       ran, or a competing consumer got it) waits for the lease, never runs in parallel. A crash
 *       between the effect and the completion leaves the lease to expire, after which the effect
 *       runs again (the store's at-risk window, counted as an expired lease).
 *   <li><b>Key-ordered concurrency.</b> With {@code Ordering.KEY} the deliveries of one routing key
 *       (the ordering key) run in order and different keys of a shard run concurrently on virtual
 *       threads, up to the subscription's concurrency; {@code PARTITION} runs a shard in order;
 *       {@code UNORDERED} runs all concurrently.
 *   <li><b>Back-pressure.</b> The prefetch ({@code basic.qos}, per shard channel) bounds what is
 *       unacked, so the broker stops delivering while the workers are behind.
 *   <li><b>Recovery.</b> The client's automatic connection recovery reopens the channels and
 *       consumers; deliveries of the lost channel are not acked (the broker redelivers them).
 *   <li><b>Shutdown.</b> {@link #close()} starts no more deliveries, lets running ones finish
 *       within the shutdown timeout, and closes the connection (the broker returns what is unacked,
 *       in order, and a standby instance takes the shards over).
 * </ul>
 *
 * <p>Transient failures whose in-place retries ran out go to the TTL wait queues ({@link
 * Builder#retryTiers}, unordered subscriptions) or to ordered parking in PostgreSQL ({@link
 * Builder#parking}, ordered ones).
 *
 * <p><b>Batches</b> (the subscription's batch size above 1, with a {@link Builder#batchHandler}):
 * consecutive deliveries of one shard queue, as many as are already delivered and waiting (up to
 * the batch size; none is waited for), run as one batch on the shard's lane: one transaction for
 * {@code EFFECTIVELY_ONCE} (the inbox rows and the handler's effects), one record at a time if the
 * batch fails; each delivery is acked after its batch finished. The prefetch must be at least the
 * batch size. Batches cannot be combined with parking or wait-queue retries, nor with {@code
 * DEDUPLICATED} (the subscription refuses it: the store claims one message id at a time).
 * Thread-safe.
 */
public final class RabbitSubscriber implements AutoCloseable {

  /** Default prefetch ({@code basic.qos}) of each shard queue's channel. */
  public static final int DEFAULT_PREFETCH = 100;

  /** Default number of shard queues per topic ({@link RabbitTopology#DEFAULT_SHARDS}). */
  public static final int DEFAULT_SHARDS = RabbitTopology.DEFAULT_SHARDS;

  /** Default wait between the attempts of the automatic connection recovery. */
  public static final Duration DEFAULT_RECOVERY_INTERVAL = Duration.ofSeconds(1);

  /** The longest wait between two retries of a consumer's recovery. */
  public static final Duration RECOVERY_BACKOFF_CAP = Duration.ofSeconds(30);

  /** Default delays of the wait-queue retries: none (in-place retries, then the dead letters). */
  public static final List<Duration> DEFAULT_RETRY_TIERS = List.of();

  /** Default time a shard lease lasts without renewal (with {@link Builder#shardLeases}). */
  public static final Duration DEFAULT_SHARD_LEASE_TTL = Duration.ofSeconds(10);

  /**
   * Default interval at which the subscriber reports its oldest unfinished deliveries to the {@link
   * Builder#ageStore} (with one).
   */
  public static final Duration DEFAULT_AGE_REPORT_INTERVAL = Duration.ofSeconds(5);

  /** Default client-provided connection name prefix (the subscription name follows). */
  public static final String CONNECTION_NAME_PREFIX = "postbox-";

  private static final Logger log = LoggerFactory.getLogger(RabbitSubscriber.class);

  private final Subscription subscription;
  private final ConnectionFactory factory;
  private final List<com.rabbitmq.client.Address> addresses;
  private final int shards;
  private final int prefetch;
  private final Ticker ticker;
  private final Sleeper sleeper;
  private final Optional<InboxStore> inbox;
  private final Duration inboxPurgeInterval;
  private final DeliveryProcessor processor;
  private final KeyedExecutor executor;
  private final InFlight inFlight = new InFlight();
  private final List<Duration> retryTiers;
  private final Optional<String> deadLetterExchange;
  private final WaitQueues waitQueues;
  private final UnfinishedAges unfinished;
  private final String member;
  private final SubscriptionShards shardWork;
  private final Housekeeping housekeeping = new Housekeeping();
  private final boolean parked;
  private final Optional<ConsumerAgeReporter> ageReporter;
  private volatile boolean running;
  private Connection connection;

  private RabbitSubscriber(
      Builder b, SubscriberBuilder.Common common, OrderedSubscriberBuilder.Ordered ordered) {
    this.subscription = b.subscription;
    this.factory = b.factory;
    this.addresses = b.addresses;
    this.shards = b.shards;
    this.prefetch = b.prefetch;
    this.ticker = common.ticker();
    this.sleeper = common.sleeper();
    this.inbox = common.inbox();
    this.inboxPurgeInterval = common.inboxPurgeInterval();
    this.member = "pid" + ProcessHandle.current().pid() + "-" + UUID.randomUUID();
    this.retryTiers = b.retryTiers;
    this.deadLetterExchange = Optional.ofNullable(b.deadLetterExchange);
    b.factory.setTopologyRecoveryRetryHandler(
        RecoveryRetries.handler(
            DEFAULT_RECOVERY_INTERVAL, RECOVERY_BACKOFF_CAP, sleeper, () -> running));
    this.waitQueues =
        new WaitQueues(
            b.subscription.name(),
            b.retryTiers,
            deadLetterExchange,
            this::connection,
            common.clock(),
            sleeper);
    this.processor =
        RabbitDeliveryProcessor.build(
            b.subscription, common, ordered, deadLetterExchange.isPresent(), waitQueues);
    waitQueues.attach(processor);
    this.unfinished =
        new UnfinishedAges(
            b.subscription.name(), List.copyOf(b.subscription.topics()), b.shards, common.clock());
    unfinished.bindTo(common.metrics(), this::heldShards);
    this.ageReporter =
        Optional.ofNullable(b.ageStore)
            .map(store ->
                new ConsumerAgeReporter(
                    store,
                    b.subscription.name(),
                    member,
                    () -> unfinished.oldest(heldShards()),
                    common.clock(),
                    b.ageReportInterval,
                    sleeper,
                    () -> running));
    this.executor = new KeyedExecutor("postbox-" + subscription.name(), subscription.concurrency());
    this.parked = ordered.parking().isPresent();
    this.shardWork =
        new SubscriptionShards(
            new SubscriptionShards.Settings(
                subscription,
                shards,
                prefetch,
                retryTiers,
                Optional.ofNullable(b.shardLeases),
                b.shardLeaseTtl,
                member),
            (ch, topic, shard, queue) ->
                new ShardConsumer(
                    ch,
                    topic,
                    shard,
                    shards,
                    queue,
                    subscription,
                    processor,
                    executor,
                    inFlight,
                    () -> running,
                    sleeper,
                    waitQueues,
                    unfinished.of(queue)),
            () -> running,
            ticker,
            sleeper);
  }

  /** A builder for a subscriber to the broker at {@code uri} ({@code amqp://user:pass@host/vh}). */
  public static Builder builder(String uri, Subscription subscription) {
    return new Builder(uri, subscription);
  }

  /**
   * Connects, declares the topology and starts consuming every shard queue.
   *
   * @throws RabbitTopologyException if a declaration conflicts with what exists
   * @throws RabbitStartupException if the broker cannot be reached or refuses the credentials or
   *     the vhost
   */
  public synchronized void start() {
    if (connection != null) {
      throw new IllegalStateException("already started");
    }
    try {
      connection =
          RabbitConnect.open(factory, addresses, CONNECTION_NAME_PREFIX + subscription.name());
    } catch (IOException | TimeoutException e) {
      throw RabbitConnect.refused("subscription '" + subscription.name() + "'", factory, e);
    }
    running = true;
    try {
      if (deadLetterExchange.isPresent()) {
        RabbitTopology.checkExchangeExists(connection, deadLetterExchange.get());
      }
      shardWork.start(connection);
    } catch (IOException | RuntimeException e) {
      close();
      if (e instanceof RabbitTopologyException t) {
        throw t;
      }
      throw new IllegalStateException(
          "subscription '" + subscription.name() + "': cannot start consuming: " + e, e);
    }
    SubscriberChores.start(
        housekeeping,
        subscription,
        inbox.filter(store -> subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE),
        inboxPurgeInterval,
        ageReporter,
        parked ? Optional.of(processor) : Optional.empty(),
        sleeper,
        () -> running);
    log.info(
        "{} consuming {} of {} (prefetch {})",
        subscription.name(),
        shardWork.describe(),
        subscription.topics(),
        prefetch);
  }

  private synchronized Connection connection() {
    if (connection == null) {
      throw new IllegalStateException("not started");
    }
    return connection;
  }

  /** Counters since start. */
  public ConsumerStats stats() {
    return processor.stats();
  }

  /**
   * Whether it runs with an open connection (false before {@link #start()}, after {@link #close()},
   * and while the client's automatic recovery reconnects).
   */
  public boolean connected() {
    Connection c;
    synchronized (this) {
      c = connection;
    }
    return running && c != null && c.isOpen();
  }

  /**
   * The shards this instance consumes now (shard {@code s}: shard queue {@code s} of every topic),
   * sorted: every shard without {@link Builder#shardLeases}, its share with them (including shards
   * being handed over); none before {@link #start()} and after {@link #close()}. The broker's
   * single active consumer decides which subscriber of a shard is active: with shard leases, once
   * the instances agree, each shard has one.
   */
  public Set<Integer> heldShards() {
    return running ? shardWork.held() : Set.of();
  }

  /**
   * The shards this instance is handing over now (with {@link Builder#shardLeases}): it starts none
   * of their deliveries, waits for the running ones, then closes their channels and releases their
   * leases. Empty without shard leases.
   */
  public Set<Integer> shardsHandingOver() {
    return shardWork.handingOver();
  }

  /** This instance's id in the shard leases (with {@link Builder#shardLeases}). */
  public String member() {
    return member;
  }

  /**
   * The age of the oldest delivery this instance received from each shard queue it consumes and has
   * not finished (handled and acked, dead-lettered, handed to a wait queue), by queue name: 0 when
   * none, so 0 on an idle queue; growing while a handler hangs with messages waiting (the broker
   * pushes the queue's head to the consumer, up to the prefetch). A delivery's time is its {@code
   * timestamp} property (the relay stamps the publish time, in whole seconds), else when it was
   * received; against the builder's {@link Builder#clock}. Also the gauge {@code
   * postbox.consumer.oldest.unprocessed.age} (tags group, topic, partition = shard; NaN for shards
   * not consumed here). Empty before {@link #start()} and after {@link #close()}. With {@link
   * Builder#ageStore}, the times behind these ages are reported there for probes in other
   * processes.
   */
  public Map<String, Duration> oldestUnfinishedAges() {
    return unfinished.read(heldShards());
  }

  /** Deliveries handed to the workers and not yet done. */
  public int inFlight() {
    return inFlight.get();
  }

  /**
   * Stops consuming, lets running deliveries finish (up to the shutdown timeout; the rest is
   * redelivered), and closes the connection. Idempotent.
   */
  @Override
  public void close() {
    Connection c;
    synchronized (this) {
      c = connection;
      if (c == null || !running) {
        return;
      }
      running = false;
    }
    shardWork.stopBalancing(); // takes and gives up no more shards
    // No basic.cancel first: with single active consumer the standby would get later messages of a
    // shard while this one still holds earlier unacked ones. Deliveries not started are abandoned
    // (not acked); closing the connection returns them, in order, and hands the shards over.
    try {
      inFlight.awaitZero(subscription.shutdownTimeout(), ticker);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    executor.close();
    housekeeping.stop(subscription.shutdownTimeout().plusSeconds(1));
    ageReporter.ifPresent(ConsumerAgeReporter::forget); // after its last report
    try {
      c.close(5_000);
    } catch (IOException | RuntimeException e) {
      c.abort();
    }
    shardWork.leave(); // after the close returned the deliveries: the others take over
    log.info("{} closed: {}", subscription.name(), stats());
  }

  /** Builds a {@link RabbitSubscriber}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder extends OrderedSubscriberBuilder<Builder> {
    private final Subscription subscription;
    private final ConnectionFactory factory = new ConnectionFactory();
    private int shards = DEFAULT_SHARDS;
    private int prefetch = DEFAULT_PREFETCH;
    private boolean prefetchSet;
    private List<Duration> retryTiers = DEFAULT_RETRY_TIERS;
    private String deadLetterExchange;
    private ShardLeaseStore shardLeases;
    private Duration shardLeaseTtl = DEFAULT_SHARD_LEASE_TTL;
    private ConsumerAgeStore ageStore;
    private Duration ageReportInterval = DEFAULT_AGE_REPORT_INTERVAL;
    private boolean ageReportIntervalSet;
    private List<com.rabbitmq.client.Address> addresses = List.of();
    private java.util.function.Consumer<ConnectionFactory> customizer = f -> {};

    private Builder(String uri, Subscription subscription) {
      Objects.requireNonNull(uri, "uri");
      this.subscription = Objects.requireNonNull(subscription, "subscription");
      try {
        factory.setUri(uri);
      } catch (Exception e) {
        throw new IllegalArgumentException("not an AMQP URI: " + uri, e);
      }
      factory.setAutomaticRecoveryEnabled(true);
      factory.setTopologyRecoveryEnabled(true);
      factory.setNetworkRecoveryInterval(DEFAULT_RECOVERY_INTERVAL.toMillis());
    }

    /**
     * Sets the number of shard queues per topic (default {@value #DEFAULT_SHARDS}, at most {@value
     * RabbitTopology#SLOTS}); fixed for a subscription, since it decides which queue a key lands in
     * (a start with another count than the subscription's exchange was declared with is refused).
     */
    public Builder shards(int shards) {
      if (shards < 1 || shards > RabbitTopology.SLOTS) {
        throw new IllegalArgumentException(
            "shards must be between 1 and " + RabbitTopology.SLOTS + ", was " + shards);
      }
      this.shards = shards;
      return this;
    }

    /**
     * Turns on delayed retries through wait queues (default: none; in-place retries, then the dead
     * letters): a transient failure whose in-place retries ran out is sent to wait queue 1 of its
     * shard queue, which returns it after {@code tiers[0]}; a failure then moves it to the next
     * tier, and after the last it is given up. {@code UNORDERED} subscriptions only (a retried
     * message comes back behind later ones).
     */
    public Builder retryTiers(Duration... tiers) {
      List<Duration> list = List.of(tiers);
      for (Duration d : list) {
        if (d.isNegative() || d.isZero()) {
          throw new IllegalArgumentException("retry tiers must be positive: " + list);
        }
      }
      this.retryTiers = list;
      return this;
    }

    /**
     * Also publishes every given-up delivery (body and properties as received, with headers that
     * say why: {@code pb_retry_error}, {@code pb_retry_error_class}, {@code pb_retry_attempts},
     * {@code pb_retry_subscription}, {@code pb_retry_first_failure}, {@code pb_retry_origin}) to
     * this existing exchange of the broker, confirmed, before the dead-letter store keeps it and
     * the delivery is acked (default: none). A crash between the confirm and the ack may publish a
     * second copy, never lose one.
     */
    public Builder deadLetterExchange(String exchange) {
      this.deadLetterExchange = Objects.requireNonNull(exchange, "exchange");
      return this;
    }

    /**
     * Sets the prefetch of each shard channel (default {@value #DEFAULT_PREFETCH}, or the batch
     * size if that is larger); with batches it must be at least the batch size.
     */
    public Builder prefetch(int prefetch) {
      if (prefetch < 1) {
        throw new IllegalArgumentException("prefetch must be at least 1");
      }
      this.prefetch = prefetch;
      this.prefetchSet = true;
      return this;
    }

    /**
     * Shares the subscription's shards among its running instances through leases in {@code store}
     * (default: none; every instance subscribes to every shard and the first is active on all of
     * them, the others standing by). Each instance then consumes about shards/instances; when one
     * joins, leaves or stops renewing its leases (dies, freezes), the shards move: the old holder
     * starts no more of a shard's deliveries, lets the running ones finish and closes the shard's
     * channels (the rest goes back to the queue in order) before it releases the lease. Single
     * active consumer stays on, so a key is never handled by two instances at once, even while
     * instances disagree about the leases. PostgreSQL: {@code
     * PostgresShardLeaseStore.create(dataSource)}. Not used by an {@code UNORDERED} subscription,
     * whose instances all compete on every shard queue.
     */
    public Builder shardLeases(ShardLeaseStore store) {
      this.shardLeases = Objects.requireNonNull(store, "store");
      return this;
    }

    /**
     * How long a shard lease lasts without renewal (default 10 s; renewed every quarter of it): an
     * instance that stops renewing (killed, frozen) loses its shards after about this long (a
     * frozen one stays the shard's active consumer until the broker closes its connection, see
     * {@link #heartbeat}).
     */
    public Builder shardLeaseTtl(Duration ttl) {
      Objects.requireNonNull(ttl, "ttl");
      if (ttl.compareTo(Duration.ofMillis(100)) < 0) {
        throw new IllegalArgumentException("shardLeaseTtl must be at least 100 ms, was " + ttl);
      }
      this.shardLeaseTtl = ttl;
      return this;
    }

    /**
     * Reports, every {@link #ageReportInterval} and as this instance's {@link #member}, the time of
     * the oldest delivery it received from each shard queue it consumes and has not finished (as
     * {@link RabbitSubscriber#oldestUnfinishedAges()} reads it, on the builder's clock) to {@code
     * store} (default: none; the age is then known in this process only), so that a lag probe in
     * another process ({@link RabbitLagProbe.Builder#ages}: the command line's {@code lag}, a
     * console) reads each queue's age, idle and stalled. The reports are removed at {@link
     * RabbitSubscriber#close()}; a failed report is logged and tried again at the next interval.
     * PostgreSQL: {@code PostgresConsumerAgeStore.create(dataSource)}.
     */
    public Builder ageStore(ConsumerAgeStore store) {
      this.ageStore = Objects.requireNonNull(store, "store");
      return this;
    }

    /**
     * How often the {@link #ageStore} is reported to (default 5 s, at least 100 ms; only with an
     * age store). A probe reading the store counts a report older than its {@link
     * RabbitLagProbe.Builder#ageStaleAfter} (default 30 s) as unknown: keep this well below it.
     */
    public Builder ageReportInterval(Duration interval) {
      this.ageReportInterval = Objects.requireNonNull(interval, "interval");
      this.ageReportIntervalSet = true;
      return this;
    }

    /** Sets the monotonic time and sleeping (default: the system's); for tests. Not an API. */
    Builder time(Ticker ticker, Sleeper sleeper) {
      return useTime(ticker, sleeper);
    }

    /** How long the connection recovery waits between attempts (default 1 s). */
    public Builder recoveryInterval(Duration interval) {
      factory.setNetworkRecoveryInterval(interval.toMillis());
      return this;
    }

    /**
     * The AMQP heartbeat timeout the connection asks for, in whole seconds (default: the client's,
     * 60 s). The broker closes a connection it heard nothing from for about two timeouts (a frozen
     * process) and hands its unacked deliveries to another consumer.
     */
    public Builder heartbeat(Duration timeout) {
      factory.setRequestedHeartbeat((int) Math.max(1, timeout.toSeconds()));
      return this;
    }

    /**
     * The brokers to connect to, tried in the order given ({@code host} or {@code host:port};
     * without a port the protocol's), instead of the URI's host and port; the URI still gives the
     * user, password and vhost (default: the URI's host and port only).
     */
    public Builder addresses(List<String> hostPorts) {
      this.addresses = RabbitConnect.addresses(hostPorts);
      return this;
    }

    /**
     * TLS with {@code context} (the trust and key material, e.g. from a Spring Boot SSL bundle),
     * verifying the broker's host name (default: as the URI says; an {@code amqps://} URI alone
     * encrypts without checking the broker's certificate).
     */
    public Builder sslContext(javax.net.ssl.SSLContext context) {
      RabbitConnect.useTls(factory, context);
      return this;
    }

    /**
     * Customizes the RabbitMQ client's {@link ConnectionFactory} the subscriber connects with,
     * after every setting above whatever the order of the calls (e.g. a {@code MetricsCollector}, a
     * {@code TrafficListener} that sees each delivery as the client reads it, socket settings). The
     * client's automatic connection and topology recovery stay on: the subscriber relies on them.
     * Default: none.
     */
    public Builder connectionFactory(java.util.function.Consumer<ConnectionFactory> customizer) {
      this.customizer = Objects.requireNonNull(customizer, "customizer");
      return this;
    }

    /** Validates and builds the subscriber (not yet started). */
    public RabbitSubscriber build() {
      prefetch =
          RabbitSubscriberChecks.validate(
              subscription,
              common().handler().isPresent(),
              ordered().batchHandler().isPresent(),
              prefetch,
              prefetchSet,
              ordered().parking().isPresent(),
              !retryTiers.isEmpty());
      checkIdempotencyStore(subscription);
      RabbitSubscriberChecks.checkAgeReports(
          subscription.name(), ageReportIntervalSet, ageStore != null, ageReportInterval);
      customizer.accept(factory);
      factory.setAutomaticRecoveryEnabled(true);
      factory.setTopologyRecoveryEnabled(true);
      return new RabbitSubscriber(this, common(), ordered());
    }
  }
}
