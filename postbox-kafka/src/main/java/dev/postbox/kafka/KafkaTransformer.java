package dev.postbox.kafka;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.KeyedExecutor;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.internal.ClientSettings;
import dev.postbox.kafka.internal.ConsumerSettings;
import dev.postbox.kafka.internal.TransactionalBatch;
import dev.postbox.kafka.internal.TransformDeadLetters;
import dev.postbox.kafka.internal.TransformLoop;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.GroupProtocol;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Consume-transform-produce, exactly once: reads a {@link Subscription}'s topics, runs each message
 * through a {@link Transform} that emits messages to Kafka, and commits the outputs and the input
 * offsets in one Kafka transaction ({@code sendOffsetsToTransaction} with the consumer's group
 * metadata, so a member of an older group generation is refused). Consumers of the outputs must
 * read with {@code isolation.level=read_committed} (Postbox's subscribers do).
 *
 * <p><b>Batching rule:</b> one transaction per poll batch, at most {@code maxBatch} records ({@code
 * max.poll.records}) and {@code batchTimeout} long; within it, records of one key (or partition,
 * per the subscription's ordering) run in order and different keys in parallel, up to the
 * subscription's concurrency. A failed batch is aborted (abortable errors) or its producer closed
 * and made again with the same {@code transactional.id} (fenced, fatal), its partitions rewound,
 * and it is retried after a backoff. With {@link Builder#deadLetters dead letters}, a poison input
 * (undecodable, a permanent failure, or {@link Builder#maxAttempts} failed attempts) is kept in the
 * store and its batch commits without it; without, a transform that always fails holds its batch.
 * The transform may run more than once per input; only committed outputs are visible.
 *
 * <p>Each instance needs its own {@code transactional.id} (default {@code
 * <subscription>-<random>}): give a restarted instance its old one and the broker aborts what its
 * predecessor left open at once, instead of after {@code transaction.timeout.ms} (default here: the
 * batch timeout + 10 s). Thread-safe.
 */
public final class KafkaTransformer implements AutoCloseable {

  /** Default most records per transaction ({@code max.poll.records}). */
  public static final int DEFAULT_MAX_BATCH = 500;

  /** Default longest a batch's transaction may stay open before it is aborted and retried. */
  public static final Duration DEFAULT_BATCH_TIMEOUT = Duration.ofSeconds(10);

  /** Default wait after a failed batch. */
  public static final Backoff DEFAULT_BACKOFF = Backoff.DEFAULT;

  /** Default attempts of an input's transform before it is dead-lettered (with dead letters). */
  public static final int DEFAULT_MAX_ATTEMPTS = 5;

  /** Default group protocol. */
  public static final GroupProtocol DEFAULT_GROUP_PROTOCOL = GroupProtocol.CLASSIC;

  private final Subscription subscription;
  private final Map<String, Object> consumerConfig;
  private final Map<String, Object> producerConfig;
  private final KeyedExecutor executor;
  private final TransformLoop loop;
  private volatile boolean running;
  private Thread thread;

  private KafkaTransformer(Builder b) {
    this.subscription = b.subscription;
    Map<String, Object> c = ConsumerSettings.forSubscription(b.consumer, subscription);
    c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    c.putIfAbsent(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, b.maxBatch);
    this.consumerConfig = Map.copyOf(c);
    Map<String, Object> p = new HashMap<>(b.producer);
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, b.transactionalId);
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.putIfAbsent(
        ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, (int) b.batchTimeout.plusSeconds(10).toMillis());
    this.producerConfig = Map.copyOf(p);
    this.executor =
        new KeyedExecutor("postbox-transform-" + subscription.name(), subscription.concurrency());
    TransactionalBatch batch =
        new TransactionalBatch(
            subscription.name(),
            b.transform,
            subscription.ordering(),
            executor,
            b.batchTimeout,
            b.ticker,
            Optional.ofNullable(b.deadLetters)
                .map(
                    d -> new TransformDeadLetters(subscription.name(), d, b.maxAttempts, b.clock)));
    this.loop =
        new TransformLoop(
            subscription.name(),
            subscription.topics(),
            new KafkaConsumer<>(
                consumerConfig, new ByteArrayDeserializer(), new ByteArrayDeserializer()),
            this::newProducer,
            batch,
            b.backoff,
            b.sleeper,
            () -> running);
  }

  private Producer<byte[], byte[]> newProducer() {
    KafkaProducer<byte[], byte[]> p =
        new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer());
    try {
      p.initTransactions(); // fences an earlier producer of this transactional.id
      return p;
    } catch (RuntimeException e) {
      p.close(Duration.ZERO);
      throw e;
    }
  }

  /** A builder for a transformer of {@code subscription} on the cluster at {@code bootstrap}. */
  public static Builder builder(String bootstrapServers, Subscription subscription) {
    return new Builder(bootstrapServers, subscription);
  }

  /** Joins the group and starts transforming on a new thread. */
  public synchronized void start() {
    if (thread != null) {
      throw new IllegalStateException("already started");
    }
    running = true;
    thread = Thread.ofPlatform().name("postbox-transform-" + subscription.name()).start(loop);
  }

  /** Transactions committed since start. */
  public long transactions() {
    return loop.transactions.get();
  }

  /** Input records committed since start. */
  public long records() {
    return loop.records.get();
  }

  /** Transactions aborted (and retried) since start. */
  public long aborted() {
    return loop.aborted.get();
  }

  /** Whether the loop runs (false once closed, or if it died). */
  public boolean alive() {
    return thread != null && thread.isAlive() && loop.failure() == null;
  }

  /** Finishes (or aborts) the batch in hand, closes the producer and leaves the group. */
  @Override
  public void close() {
    synchronized (this) {
      if (thread == null || !running) {
        return;
      }
      running = false;
    }
    try {
      loop.awaitEnd();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    executor.close();
  }

  /** Builds a {@link KafkaTransformer}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final Subscription subscription;
    private final Map<String, Object> consumer;
    private final Map<String, Object> producer = new HashMap<>();
    private Transform transform;
    private String transactionalId;
    private int maxBatch = DEFAULT_MAX_BATCH;
    private Duration batchTimeout = DEFAULT_BATCH_TIMEOUT;
    private Backoff backoff = DEFAULT_BACKOFF;
    private Ticker ticker = Ticker.SYSTEM;
    private Sleeper sleeper = Sleeper.SYSTEM;
    private DeadLetterStore deadLetters;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private Clock clock = Clock.systemUTC();

    private Builder(String bootstrapServers, Subscription subscription) {
      Objects.requireNonNull(bootstrapServers, "bootstrapServers");
      this.subscription = Objects.requireNonNull(subscription, "subscription");
      this.consumer =
          new HashMap<>(ConsumerSettings.defaults(bootstrapServers, subscription.name()));
      this.producer.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
      this.producer.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, ClientSettings.METADATA_MAX_AGE_MS);
      this.producer.put(
          ProducerConfig.CLIENT_ID_CONFIG, "postbox-transform-" + subscription.name());
      this.transactionalId = subscription.name() + "-" + UUID.randomUUID();
    }

    /** Sets the transform (required). */
    public Builder transform(Transform transform) {
      this.transform = Objects.requireNonNull(transform, "transform");
      return this;
    }

    /**
     * Sets this instance's {@code transactional.id} (default {@code <subscription>-<random>}); keep
     * it across restarts of one instance, unique among live instances.
     */
    public Builder transactionalId(String id) {
      this.transactionalId = Objects.requireNonNull(id, "id");
      return this;
    }

    /** Sets the most records per transaction ({@code max.poll.records}, default 500). */
    public Builder maxBatch(int records) {
      if (records < 1) {
        throw new IllegalArgumentException("maxBatch must be at least 1");
      }
      this.maxBatch = records;
      return this;
    }

    /** Sets how long a batch's transaction may stay open before it is aborted (default 10 s). */
    public Builder batchTimeout(Duration timeout) {
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("batchTimeout must be positive");
      }
      this.batchTimeout = timeout;
      return this;
    }

    /**
     * Keeps the inputs given up in {@code store} (for example {@code PostgresDeadLetterStore}),
     * byte-identical, so the batch goes on without them: an input that is not a Postbox message,
     * one whose transform throws a {@link dev.postbox.core.PermanentMessageException}, and one
     * whose transform failed {@link #maxAttempts} times (each failure aborts and retries its
     * batch). A dead-lettered input emits nothing; its offset commits with its batch. The letter is
     * written while the batch's transaction is open and at most once per input (a retried batch
     * finds it). Without a store (the default) a failing transform holds its batch and an
     * undecodable input is logged and passed over.
     */
    public Builder deadLetters(DeadLetterStore store) {
      this.deadLetters = Objects.requireNonNull(store, "store");
      return this;
    }

    /**
     * Sets how many times an input's transform may fail (transiently) before it is dead-lettered
     * (default {@value #DEFAULT_MAX_ATTEMPTS}; only with {@link #deadLetters}).
     */
    public Builder maxAttempts(int attempts) {
      if (attempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be at least 1");
      }
      this.maxAttempts = attempts;
      return this;
    }

    /** Sets the wait after a failed batch (default 100 ms doubling to 10 s, 50 % jitter). */
    public Builder backoff(Backoff backoff) {
      this.backoff = Objects.requireNonNull(backoff, "backoff");
      return this;
    }

    /** Sets Kafka's group protocol (default {@code CLASSIC}; {@code CONSUMER}: KIP-848). */
    public Builder groupProtocol(GroupProtocol protocol) {
      consumer.put(
          ConsumerConfig.GROUP_PROTOCOL_CONFIG,
          Objects.requireNonNull(protocol, "protocol").name().toLowerCase(Locale.ROOT));
      return this;
    }

    /**
     * Sets a consumer property ({@code group.id}, auto-commit and the isolation level are fixed).
     */
    public Builder consumerProperty(String name, Object value) {
      ConsumerSettings.checkSettable(name);
      consumer.put(name, Objects.requireNonNull(value, "value"));
      return this;
    }

    /** Sets a producer property ({@code transactional.id}, idempotence and acks are fixed). */
    public Builder producerProperty(String name, Object value) {
      producer.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
      return this;
    }

    /** Injected time, for tests. Not an API. */
    Builder time(Ticker ticker, Sleeper sleeper) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
      return this;
    }

    /** Validates and builds the transformer (not yet started). */
    public KafkaTransformer build() {
      String name = "subscription '" + subscription.name() + "'";
      if (transform == null) {
        throw new IllegalArgumentException(name + " needs a transform");
      }
      if (subscription.guarantee() != DeliveryGuarantee.EFFECTIVELY_ONCE) {
        throw new IllegalArgumentException(
            name
                + ": a transformer is EFFECTIVELY_ONCE (Kafka transactions), not "
                + subscription.guarantee());
      }
      if (subscription.batchSize() != 1) {
        throw new IllegalArgumentException(
            name + ": a transformer's batch is its poll batch (maxBatch); keep batchSize 1");
      }
      return new KafkaTransformer(this);
    }
  }
}
