package dev.postbox.kafka;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.PostboxException;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.Ordering;
import dev.postbox.core.consumer.SubscriberBuilder;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.InboxJanitor;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.internal.ClientSettings;
import dev.postbox.kafka.internal.ShareLoop;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes a {@link Subscription} through a Kafka <b>share group</b> (KIP-932, a queue on a topic):
 * any number of instances, more than the topic has partitions, take records one at a time from the
 * same partitions, each record acquired by one consumer under a time-limited lock.
 *
 * <p><b>Share groups do not keep order</b>: two records of one key can be handled by two instances
 * at once, and a released record comes back after later ones. Use it for handlers that need no
 * order and more parallelism than partitions (sending e-mails, calling a slow API); use {@link
 * KafkaSubscriber} for ordered handling. The subscription must say {@code Ordering.UNORDERED}.
 *
 * <ul>
 *   <li><b>Acknowledgements</b> are explicit and per record: {@code ACCEPT} once the engine
 *       finished it (applied, suppressed, ignored or dead-lettered; for {@code EFFECTIVELY_ONCE}
 *       after the effect and its inbox row committed), {@code RELEASE} when it was abandoned at
 *       shutdown. {@code AT_MOST_ONCE} accepts and commits a batch before handling it.
 *   <li><b>Failures</b> run the subscription's failure handler in place (retries with backoff, then
 *       the dead-letter store). A record the broker delivered more than {@link
 *       Builder#maxDeliveries(int)} times (the consumer crashed, its lock expired) is dead-lettered
 *       with {@link DeliveryCountExceededException} without running: delivery counts feed the dead
 *       letters, and the group's {@code share.delivery.count.limit} is set one above, so the broker
 *       never archives a record silently first.
 *   <li><b>Effectively once</b> with the PostgreSQL inbox, as on the other paths: a record
 *       redelivered after a crash or an expired lock is suppressed by its inbox row.
 *   <li><b>Group settings</b>: at {@link #start()} the group's {@code share.auto.offset.reset} is
 *       set to {@code earliest} (as {@link KafkaSubscriber}'s {@code auto.offset.reset}), {@code
 *       share.isolation.level} to {@code read_committed}, and the delivery count limit as above.
 * </ul>
 *
 * <p>A handler must finish within the acquisition lock ({@code share.record.lock.duration.ms}, 30 s
 * by default; {@link Builder#lockDuration}); a slower one lets the broker hand the record to
 * another consumer (absorbed by the inbox for {@code EFFECTIVELY_ONCE}). Thread-safe.
 */
public final class KafkaShareSubscriber implements AutoCloseable {

  /**
   * Default most deliveries of one record that run (Kafka's default delivery count limit is 5: the
   * fifth delivery is dead-lettered here, not archived by the broker).
   */
  public static final int DEFAULT_MAX_DELIVERIES = 4;

  /** Default most records acquired by one poll ({@code max.poll.records}, record-limit mode). */
  public static final int DEFAULT_MAX_POLL_RECORDS = 100;

  /** The longest {@link #start()} waits for the group's settings to be stored. */
  public static final Duration GROUP_CONFIG_TIMEOUT = Duration.ofSeconds(30);

  private static final Logger log = LoggerFactory.getLogger(KafkaShareSubscriber.class);

  private final Subscription subscription;
  private final Map<String, Object> config;
  private final int maxDeliveries;
  private final Optional<Duration> lockDuration;
  private final Optional<InboxStore> inbox;
  private final Duration inboxPurgeInterval;
  private final Clock clock;
  private final Ticker ticker;
  private final Sleeper sleeper;
  private final DeliveryProcessor processor;
  private final KeyedExecutor executor;
  private final AtomicInteger inFlight = new AtomicInteger();
  private volatile boolean running;
  private KafkaShareConsumer<byte[], byte[]> consumer;
  private Thread pollThread;
  private Thread purgeThread;

  private KafkaShareSubscriber(Builder b, SubscriberBuilder.Common common) {
    this.subscription = b.subscription;
    Map<String, Object> c = new HashMap<>(b.config);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, subscription.name());
    c.put("share.acknowledgement.mode", "explicit");
    this.config = Map.copyOf(c);
    this.maxDeliveries = b.maxDeliveries;
    this.lockDuration = Optional.ofNullable(b.lockDuration);
    this.inbox = common.inbox();
    this.inboxPurgeInterval = common.inboxPurgeInterval();
    this.clock = common.clock();
    this.ticker = common.ticker();
    this.sleeper = common.sleeper();
    this.processor =
        DeliveryProcessor.builder(KafkaBinding.TRANSPORT, b.subscription)
            .handler(common.handler().orElse(null))
            .inbox(inbox)
            .deadLetters(common.deadLetters())
            .time(clock, ticker, sleeper)
            .metrics(common.metrics())
            .openTelemetry(common.openTelemetry().orElse(null))
            .build();
    this.executor =
        new KeyedExecutor("postbox-share-" + subscription.name(), subscription.concurrency());
  }

  /** A builder for a share-group subscriber to the brokers at {@code bootstrapServers}. */
  public static Builder builder(String bootstrapServers, Subscription subscription) {
    return new Builder(bootstrapServers, subscription);
  }

  /**
   * Stores the group's settings, joins the share group and starts the poll thread.
   *
   * @throws IllegalStateException if already started
   * @throws PostboxException if the group's settings cannot be stored (a broker without share
   *     groups, no permission)
   */
  public synchronized void start() {
    if (consumer != null) {
      throw new IllegalStateException("already started");
    }
    configureGroup();
    consumer =
        new KafkaShareConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    consumer.subscribe(subscription.topics());
    running = true;
    pollThread =
        Thread.ofPlatform()
            .name("postbox-share-poll-" + subscription.name())
            .start(
                new ShareLoop(
                    consumer,
                    subscription,
                    processor,
                    executor,
                    maxDeliveries,
                    n -> new DeliveryCountExceededException(n, maxDeliveries),
                    () -> running,
                    clock,
                    ticker,
                    inFlight));
    if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      purgeThread =
          Thread.ofVirtual()
              .name("postbox-inbox-purge-" + subscription.name())
              .start(
                  new InboxJanitor(
                      inbox.orElseThrow(),
                      subscription.name(),
                      subscription.inboxRetention(),
                      inboxPurgeInterval,
                      sleeper,
                      () -> running));
    }
    log.info(
        "{} consuming {} through share group {} (max deliveries {})",
        subscription.name(),
        subscription.topics(),
        subscription.name(),
        maxDeliveries);
  }

  private void configureGroup() {
    List<AlterConfigOp> ops =
        new java.util.ArrayList<>(
            List.of(
                set("share.auto.offset.reset", "earliest"),
                set("share.isolation.level", "read_committed"),
                set("share.delivery.count.limit", Integer.toString(maxDeliveries + 1))));
    lockDuration.ifPresent(
        d -> ops.add(set("share.record.lock.duration.ms", Long.toString(d.toMillis()))));
    Map<String, Object> adminConfig = new HashMap<>();
    for (Map.Entry<String, Object> e : config.entrySet()) {
      if (AdminClientConfig.configNames().contains(e.getKey())) {
        adminConfig.put(e.getKey(), e.getValue());
      }
    }
    try (Admin admin = Admin.create(adminConfig)) {
      admin
          .incrementalAlterConfigs(
              Map.of(new ConfigResource(ConfigResource.Type.GROUP, subscription.name()), ops))
          .all()
          .get(GROUP_CONFIG_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new PostboxException("interrupted while configuring the share group", e);
    } catch (ExecutionException | TimeoutException e) {
      Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
      throw new PostboxException(
          "share group '"
              + subscription.name()
              + "': cannot store its settings (does the broker run share groups, Kafka 4.2+, and"
              + " may this client alter group configs?): "
              + cause,
          cause);
    }
  }

  private static AlterConfigOp set(String name, String value) {
    return new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET);
  }

  /** Counters since start. */
  public ConsumerStats stats() {
    return processor.stats();
  }

  /** Records handed to the workers and not yet done. */
  public int inFlight() {
    return inFlight.get();
  }

  /** Whether the poll thread is alive (false before start, after close, or if it died). */
  public boolean isPolling() {
    Thread t = pollThread;
    return t != null && t.isAlive();
  }

  /**
   * Stops polling, lets running records finish (up to the subscription's shutdown timeout; the rest
   * is released for another delivery) and leaves the group. Idempotent.
   */
  @Override
  public void close() {
    Thread t;
    synchronized (this) {
      if (!running) {
        return;
      }
      running = false;
      t = pollThread;
    }
    consumer.wakeup();
    try {
      t.join(subscription.shutdownTimeout().plusSeconds(30).toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    executor.close();
    if (purgeThread != null) {
      purgeThread.interrupt();
    }
    log.info("{} closed: {}", subscription.name(), stats());
  }

  /** Builds a {@link KafkaShareSubscriber}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder extends SubscriberBuilder<Builder> {
    private static final List<String> FIXED =
        List.of(
            ConsumerConfig.GROUP_ID_CONFIG,
            "share.acknowledgement.mode",
            ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);

    private final Subscription subscription;
    private final Map<String, Object> config = new HashMap<>();
    private int maxDeliveries = DEFAULT_MAX_DELIVERIES;
    private Duration lockDuration;

    private Builder(String bootstrapServers, Subscription subscription) {
      Objects.requireNonNull(bootstrapServers, "bootstrapServers");
      this.subscription = Objects.requireNonNull(subscription, "subscription");
      config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
      config.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, ClientSettings.METADATA_MAX_AGE_MS);
      config.put(ConsumerConfig.CLIENT_ID_CONFIG, "postbox-share-" + subscription.name());
      config.put("share.acquire.mode", "record_limit");
      config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, DEFAULT_MAX_POLL_RECORDS);
    }

    /**
     * Sets the most deliveries of one record that run (default {@value #DEFAULT_MAX_DELIVERIES}); a
     * later delivery is dead-lettered without running. From 1 to 9 (the broker's delivery count
     * limit, set to one more, is at most 10).
     */
    public Builder maxDeliveries(int maxDeliveries) {
      if (maxDeliveries < 1 || maxDeliveries > 9) {
        throw new IllegalArgumentException("maxDeliveries must be from 1 to 9: " + maxDeliveries);
      }
      this.maxDeliveries = maxDeliveries;
      return this;
    }

    /**
     * Sets the group's acquisition lock ({@code share.record.lock.duration.ms}; default: the
     * broker's, 30 s); the broker bounds it (15 s to 60 s by default).
     */
    public Builder lockDuration(Duration duration) {
      Objects.requireNonNull(duration, "duration");
      if (duration.isNegative() || duration.isZero()) {
        throw new IllegalArgumentException("lockDuration must be positive");
      }
      this.lockDuration = duration;
      return this;
    }

    /**
     * Sets a share consumer property ({@code max.poll.records}, security settings...). {@code
     * group.id} (the subscription's name) and {@code share.acknowledgement.mode} (explicit) are
     * fixed.
     *
     * @throws IllegalArgumentException for a fixed property
     */
    public Builder consumerProperty(String name, Object value) {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(value, "value");
      if (FIXED.contains(name)) {
        throw new IllegalArgumentException(
            name + " is fixed (group.id = subscription name; acknowledgements are explicit)");
      }
      config.put(name, value);
      return this;
    }

    /** Sets the monotonic time and sleeping (default: the system's); for tests. Not an API. */
    Builder time(Ticker ticker, Sleeper sleeper) {
      return useTime(ticker, sleeper);
    }

    /**
     * Validates and builds the subscriber (not yet started).
     *
     * @throws IllegalArgumentException if the subscription asks for order, batches, {@code
     *     DEDUPLICATED}, or has no handler (or no inbox for {@code EFFECTIVELY_ONCE})
     */
    public KafkaShareSubscriber build() {
      String name = "subscription '" + subscription.name() + "': ";
      if (subscription.ordering() != Ordering.UNORDERED) {
        throw new IllegalArgumentException(
            name
                + "share groups do not keep order (two records of a key can run at once on two"
                + " instances); set Ordering.UNORDERED, or use KafkaSubscriber for ordered"
                + " handling");
      }
      if (subscription.batchSize() > 1) {
        throw new IllegalArgumentException(name + "batches are not supported on share groups");
      }
      if (subscription.guarantee() == DeliveryGuarantee.DEDUPLICATED) {
        throw new IllegalArgumentException(
            name + "DEDUPLICATED is not supported on share groups; use EFFECTIVELY_ONCE");
      }
      checkIdempotencyStore(subscription);
      Common common = common();
      if (common.handler().isEmpty()) {
        throw new IllegalArgumentException(name + "needs a handler");
      }
      if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE
          && common.inbox().isEmpty()) {
        throw new IllegalArgumentException(name + "EFFECTIVELY_ONCE needs an inbox");
      }
      return new KafkaShareSubscriber(this, common);
    }
  }
}
