package dev.postbox.kafka;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.internal.ClientSettings;
import dev.postbox.kafka.internal.RelayHeaders;
import dev.postbox.kafka.internal.TransactionalLanes;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.BufferExhaustedException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes outbox rows to Kafka for the relay: idempotent producer, {@code acks=all}, messages
 * mapped by {@link KafkaRecords} (CloudEvents binary mode, Kafka key = ordering key).
 *
 * <p><b>Order under failure.</b> Kafka's idempotent producer appends the records of one partition
 * in send order and never appends a record after a gap. At the first failed record this publisher
 * discards its producer at once (from the failure callback, before the producer could bump its
 * epoch and send later records past the gap) and builds a new one for the next batch; the relay
 * then publishes the failed record and everything after it again. So no record of a key is ever
 * appended ahead of an earlier record of that key that was not appended.
 *
 * <p>Defaults: {@code acks=all}, {@code enable.idempotence=true}, {@code
 * max.in.flight.requests.per.connection=5}, {@code linger.ms=5}, {@code batch.size=131072}, {@code
 * compression.type=lz4}, {@code delivery.timeout.ms=120000}. Settings that would break the
 * guarantee ({@code acks}, idempotence) cannot be overridden. Used by one relay thread at a time;
 * {@link #close()} may be called from any thread.
 *
 * <p>Every record carries its lane and lease epoch ({@link KafkaRecords#PB_RELAY_LANE}, {@link
 * KafkaRecords#PB_RELAY_EPOCH}). {@link Builder#transactional(String)} makes it the
 * <em>transactional relay</em>: one transactional producer per owned lane, initialised when the
 * relay takes the lane (which fences the lane's earlier owners at the broker), one transaction per
 * lane per batch, and a row reported acknowledged only after its lane's transaction committed.
 */
public final class KafkaRelayPublisher implements RelayPublisher {

  /**
   * Producer properties set by default, before {@link Builder#producerProperty} (which may override
   * them): {@code linger.ms=5}, {@code batch.size=131072}, {@code compression.type=lz4}, {@code
   * client.id=postbox-relay}, {@code metadata.max.age.ms=10000} (so that a send retried on a
   * partition leader cut off from the other brokers goes to the new leader after one request
   * timeout, not after Kafka's 5 minutes).
   */
  public static final Map<String, Object> DEFAULT_PRODUCER_PROPERTIES =
      Map.of(
          ProducerConfig.METADATA_MAX_AGE_CONFIG,
          ClientSettings.METADATA_MAX_AGE_MS,
          ProducerConfig.LINGER_MS_CONFIG,
          5,
          ProducerConfig.BATCH_SIZE_CONFIG,
          131_072,
          ProducerConfig.COMPRESSION_TYPE_CONFIG,
          "lz4",
          ProducerConfig.CLIENT_ID_CONFIG,
          "postbox-relay");

  /** Default time a record may wait for acknowledgement ({@code delivery.timeout.ms}). */
  public static final Duration DEFAULT_DELIVERY_TIMEOUT = Duration.ofSeconds(120);

  /** Default time a send waits for a topic's metadata ({@code max.block.ms}). */
  public static final Duration DEFAULT_METADATA_WAIT = Duration.ofSeconds(5);

  /**
   * Default of the transactional relay's {@code transaction.timeout.ms}: how long the broker lets
   * one lane's transaction stay open before it aborts it (an owner that stops mid-batch holds
   * {@code read_committed} readers of the partitions it wrote to at most this long, unless its
   * successor's {@code initTransactions} aborts it sooner).
   */
  public static final Duration DEFAULT_TRANSACTION_TIMEOUT = Duration.ofSeconds(60);

  private static final Logger log = LoggerFactory.getLogger(KafkaRelayPublisher.class);

  private final Map<String, Object> config;
  private final TopicCheck topicChecks;
  private final ExpiryDiagnosis expiries;
  private final TransactionalLanes transactional; // null: the idempotent relay
  private final Object lock = new Object();
  private Producer<byte[], byte[]> producer;
  private volatile boolean closed;

  private KafkaRelayPublisher(Map<String, Object> config, String transactionalPrefix) {
    this.config = Map.copyOf(config);
    this.topicChecks =
        new TopicCheck(
            config,
            Duration.ofMillis(
                Long.parseLong(config.get(ProducerConfig.MAX_BLOCK_MS_CONFIG).toString())));
    this.expiries = new ExpiryDiagnosis(topicChecks);
    this.transactional =
        transactionalPrefix == null
            ? null
            : new TransactionalLanes(
                this.config,
                transactionalPrefix,
                Duration.ofMillis(
                    Long.parseLong(
                        config.get(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG).toString())),
                this::failure,
                c -> new KafkaProducer<>(c, new ByteArraySerializer(), new ByteArraySerializer()),
                Ticker.SYSTEM);
  }

  /** Whether this is the transactional relay (one transactional producer per owned lane). */
  public boolean transactional() {
    return transactional != null;
  }

  /** A builder for a publisher to the cluster at {@code bootstrapServers}. */
  public static Builder builder(String bootstrapServers) {
    return new Builder(bootstrapServers);
  }

  @Override
  public List<PublishOutcome> publish(List<Message> messages) throws InterruptedException {
    return send(messages).outcomes();
  }

  /**
   * Hands the records to the producer and returns; {@link PendingPublish#outcomes()} flushes what
   * still lingers and waits for the acknowledgements (at most the delivery timeout plus 30 s).
   *
   * <p>A record the producer refuses before it enters the producer (larger than {@code
   * max.request.size}, an invalid topic name, a topic the broker refuses, a topic missing after the
   * metadata wait) fails alone: the later records of its key in the batch, and for a topic failure
   * those of its topic, are not sent; the others are.
   */
  @Override
  public PendingPublish send(List<Message> messages) {
    if (transactional != null) {
      throw new IllegalStateException(
          "the transactional relay publishes by lane: use send(messages, leases)");
    }
    return send(messages, null);
  }

  /**
   * Like {@link #send(List)}, stamping each record with its lane and lease epoch ({@link
   * KafkaRecords#PB_RELAY_LANE}, {@link KafkaRecords#PB_RELAY_EPOCH}). The transactional relay
   * sends each lane's records in one transaction of the lane's producer and reports them
   * acknowledged only once it committed.
   */
  @Override
  public PendingPublish send(List<Message> messages, List<LaneLease> leases) {
    if (leases != null && leases.size() != messages.size()) {
      throw new IllegalArgumentException(
          leases.size() + " leases for " + messages.size() + " messages");
    }
    if (transactional != null) {
      return transactional.send(messages, leases);
    }
    if (messages.isEmpty()) {
      return List::of;
    }
    return sendOn(producer(), messages, leases);
  }

  /**
   * Sends on the producer that carries {@code previous}, so Kafka's idempotent producer keeps the
   * records of both in send order per partition and appends nothing after a gap; if that producer
   * was discarded (a record of an earlier batch failed), nothing of this batch is sent: every
   * message is reported failed (not permanent), to be published again after the failed one.
   */
  @Override
  public PendingPublish sendAfter(PendingPublish previous, List<Message> messages)
      throws InterruptedException {
    if (transactional != null) {
      throw new IllegalStateException("the transactional relay does not pipeline batches");
    }
    if (!(previous instanceof Sent sent)) {
      return RelayPublisher.super.sendAfter(previous, messages);
    }
    if (messages.isEmpty()) {
      return List::of;
    }
    synchronized (lock) {
      if (closed || producer != sent.producer()) {
        PublishOutcome notSent =
            new PublishOutcome.Failed(
                new IllegalStateException("not sent: an earlier batch failed"), false);
        List<PublishOutcome> all = java.util.Collections.nCopies(messages.size(), notSent);
        return () -> all;
      }
    }
    sent.followed().set(true);
    return sendOn(sent.producer(), messages, null);
  }

  /** A batch handed to a producer: its outcomes, and the producer that carries it. */
  private record Sent(
      Producer<byte[], byte[]> producer,
      java.util.concurrent.atomic.AtomicBoolean followed,
      Awaited awaited)
      implements PendingPublish {
    @Override
    public List<PublishOutcome> outcomes() throws InterruptedException {
      // a batch sent behind this one would be waited for too by a flush: then this one's records
      // go out within linger.ms (or as soon as their producer batch fills) by themselves
      return awaited.outcomes(!followed.get());
    }

    @Override
    public List<PublishOutcome> outcomesWhenIdle() throws InterruptedException {
      // the caller sends nothing more for now: lingering would only delay the records
      return awaited.outcomes(true);
    }
  }

  /** A batch's outcomes, after a flush of what lingers in its producer when {@code flush}. */
  @FunctionalInterface
  private interface Awaited {
    List<PublishOutcome> outcomes(boolean flush) throws InterruptedException;
  }

  private PendingPublish sendOn(
      Producer<byte[], byte[]> p, List<Message> messages, List<LaneLease> leases) {
    int n = messages.size();
    PublishOutcome[] outcomes = new PublishOutcome[n];
    CountDownLatch done = new CountDownLatch(n);
    Thread sender = Thread.currentThread();
    Throwable[] refused = new Throwable[1]; // a failure reported while p.send() ran: not sent
    int[] partitions = new int[n]; // of records that failed after sending
    Set<String> heldKeys = new HashSet<>();
    Set<String> heldTopics = new HashSet<>();
    boolean stop = false;
    for (int i = 0; i < n; i++) {
      if (i == n / 2) {
        CrashPoints.hit(CrashPoints.RELAY_MID_BATCH);
      }
      Message m = messages.get(i);
      if (stop) {
        outcomes[i] = new PublishOutcome.Failed(new IllegalStateException("not sent"), false);
        done.countDown();
        continue;
      }
      if (heldTopics.contains(m.topic()) || m.key().map(heldKeys::contains).orElse(false)) {
        outcomes[i] =
            new PublishOutcome.Failed(
                new IllegalStateException(
                    "not sent: behind an unpublishable message of its key or topic"),
                false);
        done.countDown();
        continue;
      }
      ProducerRecord<byte[], byte[]> record =
          RelayHeaders.stamp(KafkaRecords.toRecord(m), leases == null ? null : leases.get(i));
      int index = i;
      refused[0] = null;
      Throwable thrown = null;
      try {
        p.send(
            record,
            (metadata, error) -> {
              if (error != null && Thread.currentThread() == sender) {
                refused[0] = error; // before the record entered the producer
                return;
              }
              if (error == null) {
                outcomes[index] =
                    new PublishOutcome.Acknowledged(metadata.partition(), metadata.offset());
              } else {
                partitions[index] = metadata == null ? -1 : metadata.partition();
                outcomes[index] = failure(error, false, m.topic());
                discard(p, error);
              }
              done.countDown();
            });
      } catch (RuntimeException e) {
        thrown = e; // closed, interrupted: raised instead of reported
      }
      Throwable error = thrown != null ? thrown : refused[0];
      if (error == null) {
        continue;
      }
      PublishOutcome.Failed failed = failure(error, true, m.topic());
      outcomes[i] = failed;
      done.countDown();
      if (failed.unpublishable()) {
        m.key().ifPresent(heldKeys::add); // the producer is fine: nothing was sent past a gap
        if (failed.topicWide()) {
          heldTopics.add(m.topic());
        }
      } else {
        stop = true; // keep later records behind this one
        discard(p, error);
      }
    }
    java.util.concurrent.atomic.AtomicBoolean followed =
        new java.util.concurrent.atomic.AtomicBoolean();
    return new Sent(
        p,
        followed,
        flush -> {
          if (flush) {
            // send what lingers now that the relay waits for it
            try {
              p.flush();
            } catch (RuntimeException e) {
              log.debug("flush after a discarded producer: {}", e.toString());
            }
          }
          long deliveryMs =
              Long.parseLong(config.get(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG).toString());
          if (!done.await(deliveryMs + 30_000, TimeUnit.MILLISECONDS)) {
            discard(p, new IllegalStateException("no outcome within the delivery timeout"));
          }
          PublishOutcome[] out = new PublishOutcome[n];
          for (int i = 0; i < n; i++) {
            // null only if the producer never reported: treat as not acknowledged
            out[i] =
                outcomes[i] != null
                    ? outcomes[i]
                    : new PublishOutcome.Failed(new IllegalStateException("no outcome"), false);
          }
          expiries.explain(out, messages, partitions);
          return Arrays.asList(out);
        });
  }

  /**
   * Classifies a failed record. {@code beforeSending}: the producer refused it before it entered
   * the producer, so a timeout there is the metadata wait ({@code max.block.ms}): the topic is
   * missing, refused, or the cluster cannot be reached; the cluster is asked which.
   */
  private PublishOutcome.Failed failure(Throwable e, boolean beforeSending, String topic) {
    if (e instanceof InvalidTopicException) {
      return new PublishOutcome.Failed(e, true, true);
    }
    if (e instanceof TopicAuthorizationException) {
      return new PublishOutcome.Failed(e, false, true);
    }
    if (beforeSending
        && e instanceof org.apache.kafka.common.errors.TimeoutException
        && !(e instanceof BufferExhaustedException)) {
      return topicChecks.classify(topic, e);
    }
    return new PublishOutcome.Failed(e, permanent(e));
  }

  /**
   * The transactional relay initialises a producer for each newly owned lane ({@code
   * initTransactions}: the broker fences the lane's earlier owners) and closes those of lanes no
   * longer owned; the idempotent relay does nothing.
   */
  @Override
  public void lanesOwned(Collection<LaneLease> leases) throws InterruptedException {
    if (transactional != null) {
      transactional.lanesOwned(leases);
    }
  }

  @Override
  public void checkAccess() {
    AccessCheck.check(config, "relay publisher");
  }

  @Override
  public void close() {
    closed = true;
    topicChecks.close();
    if (transactional != null) {
      transactional.close();
    }
    synchronized (lock) {
      if (producer != null) {
        producer.close(Duration.ofSeconds(10));
        producer = null;
      }
    }
  }

  private Producer<byte[], byte[]> producer() {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("publisher is closed");
      }
      if (producer == null) {
        producer =
            new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer());
      }
      return producer;
    }
  }

  /** Drops a producer after a failure; safe from the producer's own callback thread. */
  private void discard(Producer<byte[], byte[]> p, Throwable cause) {
    synchronized (lock) {
      if (producer != p) {
        return; // already discarded
      }
      producer = null;
    }
    log.warn(
        "publish failed; discarding the producer so nothing is appended past the gap: {}",
        cause.toString());
    // From the I/O thread Kafka turns this into an immediate forced close; unsent batches fail.
    p.close(Duration.ZERO);
  }

  private static boolean permanent(Throwable e) {
    return e instanceof RecordTooLargeException
        || e instanceof RecordBatchTooLargeException
        || e instanceof InvalidTopicException
        || e instanceof SerializationException;
  }

  /** Builds a {@link KafkaRelayPublisher}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final ClientSettings config;
    private String transactionalPrefix;
    private Duration transactionTimeout = DEFAULT_TRANSACTION_TIMEOUT;

    private Builder(String bootstrapServers) {
      config = new ClientSettings(bootstrapServers);
      DEFAULT_PRODUCER_PROPERTIES.forEach(config::put);
      config.put(
          ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) DEFAULT_DELIVERY_TIMEOUT.toMillis());
      config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) DEFAULT_METADATA_WAIT.toMillis());
    }

    /** Sets a producer property (for example {@code delivery.timeout.ms}, security settings). */
    public Builder producerProperty(String name, Object value) {
      config.put(name, value);
      return this;
    }

    /**
     * Authenticates and encrypts the connection (SASL_SSL with SCRAM). The relay then checks at
     * start that the cluster accepts the credentials and fails with {@link
     * KafkaAccessDeniedException} if not. The properties it stands for ({@link
     * KafkaSecurity#clientProperties()}) must not also be set with {@link #producerProperty}.
     */
    public Builder security(KafkaSecurity security) {
      config.security(java.util.Objects.requireNonNull(security, "security").clientProperties());
      return this;
    }

    /**
     * Sets how long a record may wait for acknowledgement before it counts as failed (default 120
     * s).
     */
    public Builder deliveryTimeout(Duration timeout) {
      config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
      config.put(
          ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG,
          (int) Math.min(30_000, Math.max(1_000, timeout.toMillis() / 2)));
      return this;
    }

    /**
     * Sets how long a send waits for a topic's metadata ({@code max.block.ms}; default 5 s, Kafka's
     * own default is 60 s). A record whose topic is still unknown then fails: the publisher asks
     * the cluster whether the topic exists, and a missing (or refused) topic is reported as a
     * failure of the topic, which the relay holds instead of retrying, while the other topics flow
     * on. The relay waits this long once per such topic, not per row.
     */
    public Builder metadataWait(Duration wait) {
      config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) wait.toMillis());
      return this;
    }

    /**
     * Makes this the <em>transactional relay</em> (default: off, the idempotent relay). Each lane
     * the relay owns publishes through its own transactional producer, {@code transactional.id =
     * <prefix>-lane-<n>}, initialised when the relay takes the lane, so the broker fences every
     * earlier owner of the lane (its open transaction is aborted, its later sends and commits are
     * refused); each batch is one transaction per lane, and a row is marked published only after
     * its lane's transaction committed. {@code read_committed} consumers then never see a record
     * published by an owner that had lost its lane after a record of its successor. Every relay
     * instance of one outbox must use the same prefix, and no other outbox (nor any other producer)
     * may use it. Cost: one producer per owned lane and a commit per lane per batch (see the
     * docs/concepts/relays.md). Its producers retry with {@code retry.backoff.ms=10} and {@code
     * retry.backoff.max.ms=100} unless set by {@link #producerProperty}: a lane's next transaction
     * often meets the previous one's commit markers still being written ({@code
     * CONCURRENT_TRANSACTIONS}), and Kafka's default backoff (100 ms to 1 s) would then set the
     * latency.
     *
     * @param prefix 1 to 200 characters of {@code [A-Za-z0-9._-]}
     */
    public Builder transactional(String prefix) {
      this.transactionalPrefix = java.util.Objects.requireNonNull(prefix, "prefix");
      return this;
    }

    /**
     * Sets the transactional relay's {@code transaction.timeout.ms} (default 60 s): how long the
     * broker keeps one lane's transaction open before aborting it. Must be at least 1 s, and at
     * most the broker's {@code transaction.max.timeout.ms} (15 min by default).
     */
    public Builder transactionTimeout(Duration timeout) {
      this.transactionTimeout = java.util.Objects.requireNonNull(timeout, "timeout");
      return this;
    }

    /** Validates and builds the publisher; the producer is created lazily on the first publish. */
    public KafkaRelayPublisher build() {
      if (transactionalPrefix != null && !transactionalPrefix.matches("[A-Za-z0-9._-]{1,200}")) {
        throw new IllegalArgumentException(
            "transactional prefix must be 1 to 200 characters of [A-Za-z0-9._-], was '"
                + transactionalPrefix
                + "'");
      }
      if (transactionTimeout.compareTo(Duration.ofSeconds(1)) < 0
          || transactionTimeout.compareTo(Duration.ofMinutes(15)) > 0) {
        throw new IllegalArgumentException(
            "transactionTimeout must be in [1 s, 15 min], was " + transactionTimeout);
      }
      Object inflight = config.get(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION);
      if (inflight != null && Integer.parseInt(inflight.toString()) > 5) {
        throw new IllegalArgumentException(
            "max.in.flight.requests.per.connection must be <= 5 to keep order, was " + inflight);
      }
      Map<String, Object> built =
          config.build(
              List.of(
                  ProducerConfig.ACKS_CONFIG,
                  ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                  ProducerConfig.TRANSACTIONAL_ID_CONFIG),
              Map.of(
                  ProducerConfig.ACKS_CONFIG,
                  "all",
                  ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                  true),
              "the relay needs acks=all and idempotence");
      if (transactionalPrefix != null) {
        built.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, (int) transactionTimeout.toMillis());
        // back-to-back transactions of a lane: the next one's first sends meet the previous one's
        // markers still being written (CONCURRENT_TRANSACTIONS) and are retried; Kafka's 100 ms
        // doubling to 1 s backoff then dominates the latency (unless set by producerProperty)
        built.putIfAbsent(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 10);
        built.putIfAbsent(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 100);
      }
      return new KafkaRelayPublisher(built, transactionalPrefix);
    }
  }
}
