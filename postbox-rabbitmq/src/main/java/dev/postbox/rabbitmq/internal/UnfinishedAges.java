package dev.postbox.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.rabbitmq.RabbitTopology;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * The age of the oldest delivery a subscriber received from each shard queue and has not finished
 * (handled and acked, dead-lettered, handed to a wait queue or abandoned): the consumer's own view
 * of how far behind the head of the queue is. RabbitMQ 3.10 gives no way to read a quorum queue's
 * head message from outside without taking it ({@code basic.get} is refused with single active
 * consumer, the management API's {@code head_message_timestamp} is for classic queues), but the
 * broker pushes the head to the consumer up to the prefetch, so the oldest unfinished delivery is
 * the head whenever messages wait: an idle queue reads 0, a hung handler a growing age.
 *
 * <p>A delivery's time is its {@code timestamp} property (the relay stamps the publish time, in
 * whole seconds), or when it was received if it has none or one in the future. Ages use the clock
 * given. Thread-safe.
 */
public final class UnfinishedAges {

  private final String subscription;
  private final List<String> topics;
  private final int shards;
  private final Clock clock;
  private final Map<String, Queue> queues = new ConcurrentHashMap<>();

  /** The ages of the shard queues of {@code subscription} on {@code topics}. */
  public UnfinishedAges(String subscription, List<String> topics, int shards, Clock clock) {
    this.subscription = subscription;
    this.topics = List.copyOf(topics);
    this.shards = shards;
    this.clock = clock;
  }

  /** The unfinished deliveries of {@code queue}. */
  public Queue of(String queue) {
    return queues.computeIfAbsent(queue, q -> new Queue(clock));
  }

  /**
   * The age of the oldest unfinished delivery of each shard queue of {@code heldShards} (0 when
   * none), by queue name, in topic and shard order.
   */
  public Map<String, Duration> read(Set<Integer> heldShards) {
    Map<String, Duration> out = new LinkedHashMap<>();
    for (String topic : topics) {
      for (int shard = 0; shard < shards; shard++) {
        if (heldShards.contains(shard)) {
          String queue = RabbitTopology.queue(subscription, topic, shard);
          out.put(queue, of(queue).oldestAge());
        }
      }
    }
    return out;
  }

  /**
   * The time of the oldest unfinished delivery of each shard queue of {@code heldShards} (empty
   * when none), by queue name, in topic and shard order: what is reported to a consumer age store.
   */
  public Map<String, Optional<Instant>> oldest(Set<Integer> heldShards) {
    Map<String, Optional<Instant>> out = new LinkedHashMap<>();
    for (String topic : topics) {
      for (int shard = 0; shard < shards; shard++) {
        if (heldShards.contains(shard)) {
          String queue = RabbitTopology.queue(subscription, topic, shard);
          out.put(queue, of(queue).oldest());
        }
      }
    }
    return out;
  }

  /**
   * Registers {@link MetricName#CONSUMER_OLDEST_UNPROCESSED_AGE} per topic and shard (tags {@code
   * group}, {@code topic}, {@code partition} = the shard): seconds, NaN for a shard this instance
   * does not consume now ({@code heldShards}).
   */
  public void bindTo(PostboxMetrics metrics, Supplier<Set<Integer>> heldShards) {
    for (String topic : topics) {
      for (int shard = 0; shard < shards; shard++) {
        int s = shard;
        Queue q = of(RabbitTopology.queue(subscription, topic, shard));
        metrics.gauge(
            MetricName.CONSUMER_OLDEST_UNPROCESSED_AGE,
            Tags.of("group", subscription, "topic", topic, "partition", Integer.toString(shard)),
            () -> heldShards.get().contains(s) ? q.oldestAge().toNanos() / 1e9 : Double.NaN);
      }
    }
  }

  /** The unfinished deliveries of one shard queue. Thread-safe. */
  public static final class Queue {
    private final Clock clock;
    private final Map<Object, Instant> since = new ConcurrentHashMap<>(); // token (identity) → time

    private Queue(Clock clock) {
      this.clock = clock;
    }

    /** A delivery with {@code properties} was received; returns its token for {@link #done}. */
    public Object received(AMQP.BasicProperties properties) {
      Instant now = clock.instant();
      Instant t =
          properties == null || properties.getTimestamp() == null
              ? now
              : properties.getTimestamp().toInstant();
      Object token = new Object();
      since.put(token, t.isAfter(now) ? now : t);
      return token;
    }

    /** The delivery of {@code token} is finished (or abandoned). */
    public void done(Object token) {
      since.remove(token);
    }

    /** The age of the oldest unfinished delivery; 0 when none. */
    public Duration oldestAge() {
      Optional<Instant> oldest = oldest();
      if (oldest.isEmpty()) {
        return Duration.ZERO;
      }
      Duration age = Duration.between(oldest.get(), clock.instant());
      return age.isNegative() ? Duration.ZERO : age;
    }

    /** The time of the oldest unfinished delivery; empty when none. */
    public Optional<Instant> oldest() {
      Instant oldest = null;
      for (Instant t : since.values()) {
        if (oldest == null || t.isBefore(oldest)) {
          oldest = t;
        }
      }
      return Optional.ofNullable(oldest);
    }
  }
}
