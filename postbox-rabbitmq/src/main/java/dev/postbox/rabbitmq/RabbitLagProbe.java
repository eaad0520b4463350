package dev.postbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.consumer.QueueLag;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.spi.ConsumerAgeStore;
import dev.postbox.core.time.Ticker;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.ToDoubleFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Measures the backlog of RabbitMQ subscriptions per shard queue: the messages ready for delivery
 * and the consumers, from the broker with a passive {@code queue.declare} (AMQP; no plugin), and
 * <b>the age of the oldest message</b> the subscribers received and have not finished: of those
 * running in this process ({@link Builder#subscriber}, {@link
 * RabbitSubscriber#oldestUnfinishedAges()}), and of those running anywhere that report to a
 * consumer age store ({@link Builder#ages}, {@link RabbitSubscriber.Builder#ageStore}).
 *
 * <p>Why the age comes from the consumer, not the broker: RabbitMQ 3.10 has no AMQP method for the
 * head message's age; the management API's {@code head_message_timestamp} (and {@code rabbitmqctl
 * list_queues head_message_timestamp}) is reported for classic queues only, empty for the quorum
 * shard queues; peeking with {@code basic.get} is refused on a single-active-consumer quorum queue
 * (405 {@code RESOURCE_LOCKED}, closing the channel), and where allowed, a requeue would mark the
 * head redelivered and count a delivery. The broker pushes the head of the queue to the active
 * consumer up to its prefetch, so whenever messages wait, the consumer's oldest unfinished delivery
 * is the head: nothing in the queue is touched to read it.
 *
 * <p>Why there is no consumer utilisation: RabbitMQ reports it only through the management plugin's
 * HTTP API, and on 3.10.8 a quorum queue's {@code consumer_utilisation} reads 1.0 whenever it has a
 * consumer, one with a full prefetch or one far behind included (a classic queue reads 0.946 and
 * 0.0018 there; docs/proof/measurements/2026-12-05-rabbitmq-consumer-utilisation.txt). It would
 * read "keeping up" for a hung consumer; the ready count, the age and {@code stalled} show it
 * instead.
 *
 * <p>The reading, as on Kafka: <b>idle</b> is nothing ready and nothing unfinished (age 0);
 * <b>stalled</b> is messages ready with no consumer, or a delivery unfinished for longer than
 * {@link Builder#stalledAfter} (a hung handler holds the head, perhaps with none ready: the depth
 * alone reads that as idle); anything else is working, and a ready count or age growing between
 * reads while consumers run is one falling behind. A queue whose age nobody measured (no subscriber
 * here, no report in the age store within {@link Builder#ageStaleAfter}) has the broker's counts
 * only: its age is unknown (empty), it is never idle, and only the first kind of stall shows.
 *
 * <p>{@link #bindTo} reports each watched queue as the gauges {@code postbox.queue.ready}, {@code
 * postbox.queue.consumers} and {@code postbox.queue.stalled} (tags {@code group} = subscription,
 * {@code topic}, {@code partition} = shard; NaN while the queue does not exist or the broker cannot
 * be read); the gauges share one reading for {@value #GAUGE_READING_SECONDS} s. The age is the
 * subscriber's own gauge, {@code postbox.consumer.oldest.unprocessed.age}.
 *
 * <p>Each queue's reading is a {@link QueueLag} (postbox-core's one queue lag type, which the
 * operations API and the front ends show as they are).
 *
 * <p>Opens its connection at the first {@link #read()}; a queue that does not exist (the
 * subscription never started) is left out. Thread-safe (readings are serialised).
 */
public final class RabbitLagProbe implements AutoCloseable {

  /** How long the gauges of {@link #bindTo} share one reading, in seconds. */
  public static final int GAUGE_READING_SECONDS = 1;

  private static final Logger log = LoggerFactory.getLogger(RabbitLagProbe.class);

  /** Default age of an unfinished delivery above which its queue counts as stalled. */
  public static final Duration DEFAULT_STALLED_AFTER = Duration.ofSeconds(60);

  /**
   * Default age above which a subscriber's report in the {@link Builder#ages} store counts as
   * unknown (six of the subscribers' default report intervals).
   */
  public static final Duration DEFAULT_AGE_STALE_AFTER = Duration.ofSeconds(30);

  private record Watched(String subscription, String topic, int shards) {}

  private final ConnectionFactory factory;
  private final List<Watched> watched;
  private final List<RabbitSubscriber> subscribers;
  private final Duration stalledAfter;
  private final Optional<ConsumerAgeStore> ageStore;
  private final Duration ageStaleAfter;
  private final Clock clock;
  private final Ticker ticker;
  private Connection connection; // guarded by this
  private Map<String, QueueLag> gauged = Map.of(); // guarded by this
  private long gaugedAt; // guarded by this
  private boolean gaugedOnce; // guarded by this

  private RabbitLagProbe(Builder b) {
    this.factory = b.factory;
    this.watched = List.copyOf(b.watched.values());
    this.subscribers = List.copyOf(b.subscribers);
    this.stalledAfter = b.stalledAfter;
    this.ageStore = Optional.ofNullable(b.ageStore);
    this.ageStaleAfter = b.ageStaleAfter;
    this.clock = b.clock;
    this.ticker = b.ticker;
  }

  /** A builder for a probe of the broker at {@code uri} ({@code amqp://user:pass@host/vh}). */
  public static Builder builder(String uri) {
    return new Builder(uri);
  }

  /**
   * Reads every shard queue of the watched subscriptions now, in subscription, topic and shard
   * order.
   *
   * @throws RabbitStartupException if the broker cannot be reached or refuses the credentials
   */
  public synchronized List<QueueLag> read() {
    Connection c = connection();
    Map<String, Duration> ages = new LinkedHashMap<>();
    for (RabbitSubscriber s : subscribers) {
      s.oldestUnfinishedAges().forEach((q, age) -> ages.merge(q, age, RabbitLagProbe::older));
    }
    ageStore.ifPresent(
        store -> reported(store).forEach((q, a) -> ages.merge(q, a, RabbitLagProbe::older)));
    List<QueueLag> out = new ArrayList<>();
    for (Watched w : watched) {
      for (int shard = 0; shard < w.shards(); shard++) {
        String queue = RabbitTopology.queue(w.subscription(), w.topic(), shard);
        AMQP.Queue.DeclareOk ok = passive(c, queue);
        if (ok != null) {
          out.add(lag(w, shard, queue, ok, Optional.ofNullable(ages.get(queue))));
        }
      }
    }
    return List.copyOf(out);
  }

  /**
   * Registers the gauges {@code postbox.queue.ready}, {@code postbox.queue.consumers} and {@code
   * postbox.queue.stalled} of every watched queue with {@code metrics}.
   */
  public RabbitLagProbe bindTo(PostboxMetrics metrics) {
    Objects.requireNonNull(metrics, "metrics");
    for (Watched w : watched) {
      for (int shard = 0; shard < w.shards(); shard++) {
        String queue = RabbitTopology.queue(w.subscription(), w.topic(), shard);
        Tags tags =
            Tags.of(
                "group",
                w.subscription(),
                "topic",
                w.topic(),
                "partition",
                Integer.toString(shard));
        metrics.gauge(MetricName.QUEUE_READY, tags, () -> gauge(queue, QueueLag::messagesReady));
        metrics.gauge(MetricName.QUEUE_CONSUMERS, tags, () -> gauge(queue, QueueLag::consumers));
        metrics.gauge(MetricName.QUEUE_STALLED, tags, () -> gauge(queue, q -> q.stalled() ? 1 : 0));
      }
    }
    return this;
  }

  /** {@code value} of {@code queue}'s latest reading (renewed after a second), or NaN. */
  private synchronized double gauge(String queue, ToDoubleFunction<QueueLag> value) {
    long now = ticker.nanos();
    if (!gaugedOnce || now - gaugedAt >= TimeUnit.SECONDS.toNanos(GAUGE_READING_SECONDS)) {
      gaugedOnce = true;
      gaugedAt = now;
      try {
        Map<String, QueueLag> byQueue = new LinkedHashMap<>();
        read().forEach(q -> byQueue.put(q.queue(), q));
        gauged = byQueue;
      } catch (RuntimeException e) {
        gauged = Map.of();
        log.warn("lag probe: cannot read the queues for the gauges: {}", e.toString());
      }
    }
    QueueLag q = gauged.get(queue);
    return q == null ? Double.NaN : value.applyAsDouble(q);
  }

  private QueueLag lag(
      Watched w, int shard, String queue, AMQP.Queue.DeclareOk ok, Optional<Duration> age) {
    long ready = ok.getMessageCount();
    int consumers = ok.getConsumerCount();
    boolean stalled =
        ready > 0 && consumers == 0 || age.filter(a -> a.compareTo(stalledAfter) >= 0).isPresent();
    return new QueueLag(w.subscription(), w.topic(), shard, queue, ready, consumers, age, stalled);
  }

  /**
   * The ages the watched subscriptions' instances reported to {@code store} within the staleness
   * bound, by queue (0 where they have nothing unfinished); none if the store cannot be read.
   */
  private Map<String, Duration> reported(ConsumerAgeStore store) {
    Instant now = clock.instant();
    Set<String> names = new LinkedHashSet<>();
    watched.forEach(w -> names.add(w.subscription()));
    Map<String, Duration> out = new LinkedHashMap<>();
    for (String name : names) {
      try {
        store
            .read(name, now, ageStaleAfter)
            .forEach(
                (q, oldest) -> out.put(q, oldest.map(t -> ageAt(t, now)).orElse(Duration.ZERO)));
      } catch (RuntimeException e) {
        log.warn("lag probe: cannot read the reported ages of {}: {}", name, e.toString());
      }
    }
    return out;
  }

  private static Duration ageAt(Instant oldest, Instant now) {
    Duration age = Duration.between(oldest, now);
    return age.isNegative() ? Duration.ZERO : age;
  }

  private static Duration older(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  /** The queue's counts, or null if it does not exist; on a channel of its own (404 closes it). */
  private static AMQP.Queue.DeclareOk passive(Connection c, String queue) {
    Channel ch = null;
    try {
      ch = c.createChannel();
      return ch.queueDeclarePassive(queue);
    } catch (IOException | RuntimeException e) {
      Integer code = RabbitTopology.replyCode(e);
      if (code != null && code == 404) {
        return null;
      }
      throw new java.io.UncheckedIOException(
          "cannot read queue '" + queue + "': " + e,
          e instanceof IOException io ? io : new IOException(e));
    } finally {
      if (ch != null && ch.isOpen()) {
        try {
          ch.close();
        } catch (IOException | TimeoutException | RuntimeException ignored) {
          // the read is done
        }
      }
    }
  }

  private Connection connection() {
    if (connection == null || !connection.isOpen()) {
      try {
        connection = RabbitConnect.open(factory, List.of(), "postbox-lag-probe");
      } catch (IOException | TimeoutException e) {
        throw RabbitConnect.refused("the lag probe", factory, e);
      }
    }
    return connection;
  }

  /** Closes the connection. Idempotent. */
  @Override
  public synchronized void close() {
    Connection c = connection;
    connection = null;
    if (c != null && c.isOpen()) {
      try {
        c.close(5_000);
      } catch (IOException | RuntimeException e) {
        c.abort();
      }
    }
  }

  /** Builds a {@link RabbitLagProbe}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final ConnectionFactory factory = new ConnectionFactory();
    private final Map<String, Watched> watched = new LinkedHashMap<>();
    private final List<RabbitSubscriber> subscribers = new ArrayList<>();
    private Duration stalledAfter = DEFAULT_STALLED_AFTER;
    private ConsumerAgeStore ageStore;
    private Duration ageStaleAfter = DEFAULT_AGE_STALE_AFTER;
    private boolean ageStaleAfterSet;
    private Clock clock = Clock.systemUTC();
    private Ticker ticker = Ticker.SYSTEM;

    private Builder(String uri) {
      Objects.requireNonNull(uri, "uri");
      try {
        factory.setUri(uri);
      } catch (Exception e) {
        throw new IllegalArgumentException("not an AMQP URI: " + uri, e);
      }
      factory.setAutomaticRecoveryEnabled(false);
    }

    /**
     * Watches the {@code shards} shard queues of {@code subscription} on each of {@code topics}
     * (the subscriber's {@code shards}, default {@value RabbitTopology#DEFAULT_SHARDS}).
     */
    public Builder subscription(String subscription, int shards, String... topics) {
      Objects.requireNonNull(subscription, "subscription");
      if (shards < 1 || shards > RabbitTopology.SLOTS) {
        throw new IllegalArgumentException(
            "shards must be between 1 and " + RabbitTopology.SLOTS + ", was " + shards);
      }
      if (topics.length == 0) {
        throw new IllegalArgumentException(
            "subscription '" + subscription + "' needs at least one topic");
      }
      for (String topic : topics) {
        Objects.requireNonNull(topic, "topic");
        watched.put(subscription + "\n" + topic, new Watched(subscription, topic, shards));
      }
      return this;
    }

    /**
     * Also reports the age of the oldest unfinished delivery of each shard queue {@code subscriber}
     * (running in this process) consumes; several may be given (the oldest age counts).
     */
    public Builder subscriber(RabbitSubscriber subscriber) {
      subscribers.add(Objects.requireNonNull(subscriber, "subscriber"));
      return this;
    }

    /**
     * How old an unfinished delivery may get before its queue counts as stalled (default 60 s):
     * above the longest a handler normally takes.
     */
    public Builder stalledAfter(Duration age) {
      Objects.requireNonNull(age, "age");
      if (age.isNegative() || age.isZero()) {
        throw new IllegalArgumentException("stalledAfter must be positive, was " + age);
      }
      this.stalledAfter = age;
      return this;
    }

    /**
     * Also reads the age of the oldest unfinished delivery of each shard queue from {@code store},
     * where the subscribers of the watched subscriptions report it wherever they run ({@link
     * RabbitSubscriber.Builder#ageStore}); default: none, the age is known only for the subscribers
     * given to {@link #subscriber}. A queue's age is then the oldest any live instance reported (0
     * when all reported nothing unfinished, so an idle queue reads idle); a queue whose reports are
     * all older than {@link #ageStaleAfter} (its instances stopped, or cannot reach the store)
     * reads as unknown, not idle. PostgreSQL: {@code PostgresConsumerAgeStore.create(dataSource)}.
     * A store that cannot be read is logged and its ages left unknown.
     */
    public Builder ages(ConsumerAgeStore store) {
      this.ageStore = Objects.requireNonNull(store, "store");
      return this;
    }

    /**
     * How old a report in the {@link #ages} store may be and still count (default 30 s; positive;
     * only with a store): above the subscribers' {@link RabbitSubscriber.Builder#ageReportInterval}
     * (default 5 s), with room for a report that was slow or failed and for the clock skew between
     * machines.
     */
    public Builder ageStaleAfter(Duration age) {
      this.ageStaleAfter = Objects.requireNonNull(age, "age");
      this.ageStaleAfterSet = true;
      return this;
    }

    /** Sets the clock the reported times are aged on; for tests. Not an API. */
    Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** Sets the monotonic time of the gauges' shared reading; for tests. Not an API. */
    Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /** Validates and builds the probe (not yet connected). */
    public RabbitLagProbe build() {
      if (watched.isEmpty()) {
        throw new IllegalArgumentException("the lag probe needs at least one subscription");
      }
      if (ageStaleAfterSet && ageStore == null) {
        throw new IllegalArgumentException(
            "the lag probe's ageStaleAfter is set but there is no ages store to read");
      }
      if (ageStaleAfter.isNegative() || ageStaleAfter.isZero()) {
        throw new IllegalArgumentException(
            "the lag probe's ageStaleAfter must be positive, was " + ageStaleAfter);
      }
      return new RabbitLagProbe(this);
    }
  }
}
