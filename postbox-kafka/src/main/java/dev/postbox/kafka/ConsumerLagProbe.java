package dev.postbox.kafka;

import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.internal.ClientSettings;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Measures consumer groups from outside: for every partition a group has committed an offset for,
 * the offset lag and <b>the age of the oldest unprocessed message</b>, the timestamp of the first
 * record at or after the committed offset (the first one the group has not finished) against now.
 * Because it reads the committed offsets, not a running consumer's memory, the age keeps growing
 * while every consumer of the group is stopped, hung or crash-looping: the silent failure that
 * error rates never show.
 *
 * <p>How it reads: the admin client lists the group's committed offsets; a consumer of its own (no
 * group, {@code read_committed}) reads the end offsets (the last stable offset) and, for each
 * partition that lags, seeks to the committed offset and fetches until it holds a record of that
 * partition. Under {@code read_committed} the committed offset may point at a transaction marker or
 * an aborted record, which are never returned: the first record actually returned is used; if none
 * is returned (only markers remain), the partition counts as caught up (age 0).
 *
 * <pre>{@code
 * try (ConsumerLagProbe probe = ConsumerLagProbe.builder(bootstrap).groups("inventory").build()) {
 *   probe.bindTo(metrics); // postbox.group.oldest.unprocessed.age, postbox.group.offset.lag
 *   List<PartitionLag> lags = probe.read();
 * }
 * }</pre>
 *
 * <p>Defaults: no groups (add them with {@link Builder#groups}); fetch timeout 5 s per reading;
 * gauges share one reading for 1 s; the system clock. Partitions the group has never committed an
 * offset for are not reported. Thread-safe (readings are serialised).
 */
public final class ConsumerLagProbe implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ConsumerLagProbe.class);

  /**
   * The lag of one group on one partition.
   *
   * @param group the consumer group
   * @param topic the topic
   * @param partition the partition
   * @param committedOffset the group's committed offset (the next record it will process)
   * @param endOffset the partition's last stable offset
   * @param offsetLag {@code endOffset - committedOffset}, at least 0 (counts transaction markers)
   * @param oldestUnprocessedAge age of the first record at or after the committed offset; zero when
   *     caught up
   */
  public record PartitionLag(
      String group,
      String topic,
      int partition,
      long committedOffset,
      long endOffset,
      long offsetLag,
      Duration oldestUnprocessedAge) {}

  private final List<String> groups;
  private final Map<String, Object> clientConfig;
  private final Duration fetchTimeout;
  private final Duration cacheFor;
  private final Clock clock;
  private final Ticker ticker;
  private final ReentrantLock lock = new ReentrantLock();
  private final Map<List<Object>, PartitionLag> latest = new ConcurrentHashMap<>();
  private final Set<List<Object>> gauged = ConcurrentHashMap.newKeySet();
  private volatile PostboxMetrics metrics;
  private Admin admin; // guarded by lock
  private KafkaConsumer<byte[], byte[]> consumer; // guarded by lock
  private long readAtNanos; // guarded by lock
  private boolean readOnce; // guarded by lock
  private boolean closed; // guarded by lock

  private ConsumerLagProbe(Builder b) {
    this.groups = List.copyOf(b.groups);
    this.clientConfig = b.settings.build(List.of(), Map.of(), "");
    this.fetchTimeout = b.fetchTimeout;
    this.cacheFor = b.cacheFor;
    this.clock = b.clock;
    this.ticker = b.ticker;
  }

  /** A builder for a probe of the cluster at {@code bootstrapServers}. */
  public static Builder builder(String bootstrapServers) {
    return new Builder(bootstrapServers);
  }

  /**
   * Reads every group's lag now, in group, topic, partition order.
   *
   * @throws IllegalStateException if the cluster cannot be read
   */
  public List<PartitionLag> read() {
    lock.lock();
    try {
      if (closed) {
        throw new IllegalStateException("probe is closed");
      }
      List<PartitionLag> out = new ArrayList<>();
      for (String group : groups) {
        out.addAll(readGroup(group));
      }
      latest.clear();
      for (PartitionLag l : out) {
        latest.put(key(l.group(), l.topic(), l.partition()), l);
      }
      readAtNanos = ticker.nanos();
      readOnce = true;
      registerGauges(out);
      return out;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Registers {@code postbox.group.oldest.unprocessed.age} and {@code postbox.group.offset.lag}
   * (tags group, topic, partition) on {@code metrics} for the partitions known now and those found
   * by later readings; gauges share one reading for the cache time. Returns this probe.
   */
  public ConsumerLagProbe bindTo(PostboxMetrics metrics) {
    this.metrics = Objects.requireNonNull(metrics, "metrics");
    try {
      read();
    } catch (RuntimeException e) {
      log.warn("lag probe: first reading failed; gauges appear with the first good one", e);
    }
    return this;
  }

  @Override
  public void close() {
    lock.lock();
    try {
      closed = true;
      if (consumer != null) {
        consumer.close(Duration.ofSeconds(5));
        consumer = null;
      }
      if (admin != null) {
        admin.close(Duration.ofSeconds(5));
        admin = null;
      }
    } finally {
      lock.unlock();
    }
  }

  private void registerGauges(List<PartitionLag> lags) {
    PostboxMetrics m = metrics;
    if (m == null) {
      return;
    }
    for (PartitionLag l : lags) {
      List<Object> k = key(l.group(), l.topic(), l.partition());
      if (!gauged.add(k)) {
        continue;
      }
      Tags tags =
          Tags.of(
              "group", l.group(), "topic", l.topic(), "partition", Integer.toString(l.partition()));
      m.gauge(
          MetricName.GROUP_OLDEST_UNPROCESSED_AGE,
          tags,
          () -> {
            PartitionLag l2 = fresh(k);
            return l2 == null ? Double.NaN : l2.oldestUnprocessedAge().toNanos() / 1e9;
          });
      m.gauge(
          MetricName.GROUP_OFFSET_LAG,
          tags,
          () -> {
            PartitionLag l2 = fresh(k);
            return l2 == null ? Double.NaN : l2.offsetLag();
          });
    }
  }

  /** The reading of one partition, read again first if the last reading is too old. */
  private PartitionLag fresh(List<Object> k) {
    lock.lock();
    try {
      if (!closed && (!readOnce || ticker.nanos() - readAtNanos > cacheFor.toNanos())) {
        try {
          read();
        } catch (RuntimeException e) {
          log.debug("lag probe: reading failed: {}", e.toString());
          latest.clear();
          readAtNanos = ticker.nanos(); // do not hammer a cluster that is down
        }
      }
      return latest.get(k);
    } finally {
      lock.unlock();
    }
  }

  private static List<Object> key(String group, String topic, int partition) {
    return List.of(group, topic, partition);
  }

  private List<PartitionLag> readGroup(String group) {
    Map<TopicPartition, OffsetAndMetadata> committed;
    try {
      committed =
          admin()
              .listConsumerGroupOffsets(group)
              .partitionsToOffsetAndMetadata()
              .get(30, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("cannot read the committed offsets of group " + group, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
    Map<TopicPartition, Long> offsets = new HashMap<>();
    committed.forEach((tp, om) -> {
      if (om != null) {
        offsets.put(tp, om.offset());
      }
    });
    if (offsets.isEmpty()) {
      return List.of();
    }
    KafkaConsumer<byte[], byte[]> c = consumer();
    Map<TopicPartition, Long> ends = c.endOffsets(offsets.keySet(), Duration.ofSeconds(30));
    Set<TopicPartition> lagging = new LinkedHashSet<>();
    offsets.forEach((tp, off) -> {
      if (ends.getOrDefault(tp, 0L) > off) {
        lagging.add(tp);
      }
    });
    Map<TopicPartition, Long> timestamps = firstTimestamps(c, lagging, offsets, ends);
    long now = clock.millis();
    List<PartitionLag> out = new ArrayList<>();
    for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
      TopicPartition tp = e.getKey();
      long end = ends.getOrDefault(tp, e.getValue());
      Long ts = timestamps.get(tp);
      Duration age = ts == null ? Duration.ZERO : Duration.ofMillis(Math.max(0, now - ts));
      out.add(
          new PartitionLag(
              group,
              tp.topic(),
              tp.partition(),
              e.getValue(),
              end,
              Math.max(0, end - e.getValue()),
              age));
    }
    out.sort(
        java.util.Comparator.comparing(PartitionLag::topic)
            .thenComparingInt(PartitionLag::partition));
    return out;
  }

  /**
   * The timestamp of the first record at or after the committed offset of each lagging partition
   * (absent when the fetch returned none within the timeout: only markers or aborted records).
   */
  private Map<TopicPartition, Long> firstTimestamps(
      KafkaConsumer<byte[], byte[]> c,
      Set<TopicPartition> lagging,
      Map<TopicPartition, Long> at,
      Map<TopicPartition, Long> ends) {
    Map<TopicPartition, Long> out = new HashMap<>();
    if (lagging.isEmpty()) {
      return out;
    }
    c.assign(lagging);
    for (TopicPartition tp : lagging) {
      c.seek(tp, at.get(tp));
    }
    Set<TopicPartition> waiting = new HashSet<>(lagging);
    long deadline = ticker.deadlineIn(fetchTimeout);
    while (!waiting.isEmpty() && !ticker.reached(deadline)) {
      for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
        TopicPartition tp = new TopicPartition(r.topic(), r.partition());
        if (waiting.remove(tp)) {
          out.put(tp, r.timestamp());
          c.pause(List.of(tp));
        }
      }
      // Under read_committed a partition whose remaining records are markers or aborted returns
      // nothing; its position then reaches the end offset: nothing unprocessed there.
      waiting.removeIf(tp -> c.position(tp) >= ends.get(tp));
    }
    c.unsubscribe();
    return out;
  }

  private Admin admin() {
    if (admin == null) {
      Map<String, Object> cfg = new HashMap<>();
      clientConfig.forEach((k, v) -> {
        if (AdminClientConfig.configNames().contains(k)) {
          cfg.put(k, v);
        }
      });
      cfg.put(AdminClientConfig.CLIENT_ID_CONFIG, "postbox-lag-probe-admin");
      admin = Admin.create(cfg);
    }
    return admin;
  }

  private KafkaConsumer<byte[], byte[]> consumer() {
    if (consumer == null) {
      Map<String, Object> cfg = new HashMap<>(clientConfig);
      cfg.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
      cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
      cfg.put(ConsumerConfig.CLIENT_ID_CONFIG, "postbox-lag-probe");
      cfg.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
      cfg.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 16_384);
      cfg.remove(ConsumerConfig.GROUP_ID_CONFIG);
      consumer = new KafkaConsumer<>(cfg, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }
    return consumer;
  }

  /** Builds a {@link ConsumerLagProbe}; validates at {@link #build()}. Not thread-safe. */
  public static final class Builder {
    private final ClientSettings settings;
    private final Set<String> groups = new LinkedHashSet<>();
    private Duration fetchTimeout = Duration.ofSeconds(5);
    private Duration cacheFor = Duration.ofSeconds(1);
    private Clock clock = Clock.systemUTC();
    private Ticker ticker = Ticker.SYSTEM;

    private Builder(String bootstrapServers) {
      settings = new ClientSettings(bootstrapServers);
    }

    /** Adds consumer groups to measure. */
    public Builder groups(String... groups) {
      for (String g : groups) {
        this.groups.add(Objects.requireNonNull(g, "group"));
      }
      return this;
    }

    /** Sets how long one reading waits for the records at the committed offsets (default 5 s). */
    public Builder fetchTimeout(Duration timeout) {
      this.fetchTimeout = Objects.requireNonNull(timeout, "timeout");
      return this;
    }

    /** Sets how long gauges reuse one reading (default 1 s). */
    public Builder cacheFor(Duration cacheFor) {
      this.cacheFor = Objects.requireNonNull(cacheFor, "cacheFor");
      return this;
    }

    /** Sets the clock ages are measured with (default: system UTC). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Sets the monotonic time of the reading cache and the fetch timeout (tests; default system).
     */
    Builder ticker(Ticker ticker) {
      this.ticker = Objects.requireNonNull(ticker, "ticker");
      return this;
    }

    /** Sets a client property (security settings, for example). */
    public Builder clientProperty(String name, Object value) {
      settings.put(name, value);
      return this;
    }

    /** Validates and builds the probe; clients are created on the first reading. */
    public ConsumerLagProbe build() {
      if (groups.isEmpty()) {
        throw new IllegalArgumentException("at least one group is required");
      }
      if (fetchTimeout.isNegative() || fetchTimeout.isZero()) {
        throw new IllegalArgumentException("fetchTimeout must be positive");
      }
      if (cacheFor.isNegative()) {
        throw new IllegalArgumentException("cacheFor must not be negative");
      }
      return new ConsumerLagProbe(this);
    }
  }
}
