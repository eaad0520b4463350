package dev.postbox.kafka;

import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.kafka.RetryTopicNames.Source;
import dev.postbox.kafka.internal.AckedSend;
import dev.postbox.kafka.internal.StoredRecords;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Retry topics, the alternative to ordered parking: a record whose in-place retries of a transient
 * failure ran out is produced, byte-identical (key, value, headers) with retry headers added, to
 * {@code <topic>.<subscription>.retry.1} before its offset may be committed; an internal consumer
 * (group {@code <subscription>.retry}) applies it again once due, then moves it to {@code
 * .retry.2}... and after the last tier to {@code <topic>.<subscription>.dlt} (and the dead-letter
 * store, if any).
 *
 * <p><b>One subscription's topics</b>: the subscription is in the name ({@link RetryTopicNames}
 * says why), so another consumer group of the topic never applies this one's failures. Records also
 * carry the subscription ({@value #SUBSCRIPTION}); one naming another subscription (two names that
 * read alike, say topic {@code a.b} of {@code c} and topic {@code a} of {@code b.c}) is passed
 * over. The shared topics of the earlier naming are drained on upgrade ({@link LegacyRetryTopics}).
 *
 * <p><b>Order is lost</b>: a retried message is applied after later messages of its key. Use
 * ordered parking when that matters.
 *
 * <p><b>Trust</b>: retry headers mean something only on records read from these retry topics, and
 * even there the tier comes from the topic name, not a header; the due time is clamped to at most
 * now + the tier's delay, so a forged header can neither stall a partition, skip tiers nor loop.
 * Retry headers already on a record are replaced, never accumulated.
 */
final class KafkaRetryTopics implements DeliveryProcessor.RetriesExhausted {

  private static final Logger log = LoggerFactory.getLogger(KafkaRetryTopics.class);

  static final String ATTEMPT = "pb_retry_attempt";
  static final String FIRST_FAILURE = "pb_retry_first_failure";
  static final String ERROR = "pb_retry_error";
  static final String ORIGIN = "pb_retry_origin";
  static final String DUE = "pb_retry_due";
  static final String SUBSCRIPTION = "pb_retry_subscription";
  private static final Set<String> OURS =
      Set.of(ATTEMPT, FIRST_FAILURE, ERROR, ORIGIN, DUE, SUBSCRIPTION);

  private final String name;
  private final Collection<String> topics;
  private final List<Duration> tiers;
  private final Map<String, Source> sources = new HashMap<>(); // retry topic → topic, tier
  private LegacyRetryTopics legacy = LegacyRetryTopics.NONE;
  private final Map<String, Object> consumerConfig;
  private final Clock clock;
  private final Sleeper sleeper;
  private DeliveryProcessor processor;
  private KafkaProducer<byte[], byte[]> producer;
  private AckedSend sender;
  private KafkaConsumer<byte[], byte[]> consumer;
  private Thread thread;
  private volatile boolean running;
  private final Map<TopicPartition, Instant> resumeAt = new HashMap<>(); // retry thread only
  private final Map<TopicPartition, Long> waited = new HashMap<>(); // retry thread only

  KafkaRetryTopics(
      String name,
      Collection<String> topics,
      List<Duration> tiers,
      Map<String, Object> consumerConfig,
      Clock clock,
      Sleeper sleeper) {
    this.name = name;
    this.topics = List.copyOf(topics);
    this.tiers = List.copyOf(tiers);
    this.consumerConfig = consumerConfig;
    this.clock = clock;
    this.sleeper = sleeper;
    sources.putAll(RetryTopicNames.retryTopics(this.topics, name, this.tiers.size()));
  }

  /**
   * Creates missing retry and dead-letter topics, finds the earlier shared retry topics, opens the
   * producer. Before the main consumer.
   */
  void open(DeliveryProcessor processor) {
    this.processor = processor;
    createTopics();
    Map<String, Object> p = connection(ProducerConfig.configNames());
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    p.put(ProducerConfig.CLIENT_ID_CONFIG, "postbox-" + name + "-retry-producer");
    producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    sender = new AckedSend(producer, name, sleeper);
  }

  /** Starts the internal consumer of the retry topics. */
  void start() {
    Map<String, Object> c = new HashMap<>(consumerConfig);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, name + ".retry");
    c.put(ConsumerConfig.CLIENT_ID_CONFIG, "postbox-" + name + "-retry");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
    c.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false); // never recreate a deleted one
    c.remove(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG); // eager: pauses reset cleanly
    consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    running = true;
    thread = Thread.ofPlatform().name("postbox-retry-" + name).start(this::loop);
  }

  /** Stops the retry consumer and closes the producer. After the main consumer stopped. */
  void close() {
    running = false;
    if (consumer != null) {
      consumer.wakeup();
    }
    if (thread != null) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (producer != null) {
      producer.close(Duration.ofSeconds(10));
    }
  }

  private Map<String, Object> connection(Set<String> allowed) {
    Map<String, Object> out = new HashMap<>();
    consumerConfig.forEach((k, v) -> {
      if (allowed.contains(k)
          && !k.equals(ConsumerConfig.CLIENT_ID_CONFIG)
          && !k.startsWith("key.")
          && !k.startsWith("value.")) {
        out.put(k, v);
      }
    });
    return out;
  }

  private void createTopics() {
    try (Admin admin = Admin.create(connection(AdminClientConfig.configNames()))) {
      Map<String, TopicDescription> described =
          admin.describeTopics(topics).allTopicNames().get(30, TimeUnit.SECONDS);
      List<NewTopic> wanted = new ArrayList<>();
      for (String t : topics) {
        int partitions = described.get(t).partitions().size();
        for (int i = 1; i <= tiers.size(); i++) {
          wanted.add(
              new NewTopic(
                  RetryTopicNames.retryTopic(t, name, i),
                  Optional.of(partitions),
                  Optional.empty()));
        }
        wanted.add(
            new NewTopic(
                RetryTopicNames.deadLetterTopic(t, name),
                Optional.of(partitions),
                Optional.empty()));
      }
      admin
          .createTopics(wanted)
          .values()
          .forEach((topic, f) -> {
            try {
              f.get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
              if (!(e.getCause() instanceof TopicExistsException)) {
                throw new IllegalStateException("cannot create " + topic, e.getCause());
              }
            } catch (TimeoutException e) {
              throw new IllegalStateException("cannot create " + topic, e);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new IllegalStateException("interrupted creating " + topic, e);
            }
          });
      legacy =
          LegacyRetryTopics.find(
              admin, name, name + ".retry", topics, tiers.size(), Set.copyOf(sources.keySet()));
      sources.putAll(legacy.topics());
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("cannot describe " + topics, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted describing " + topics, e);
    }
  }

  // ---------------------------------------------------------------- hand-off from the main path

  @Override
  public boolean handOff(
      Incoming in, Throwable error, int attempts, Instant firstFailure, BooleanSupplier owned) {
    String origin = in.topic() + "-" + in.partition() + "@" + in.offset();
    return send(in.topic(), 1, in, error, firstFailure, origin, owned);
  }

  /**
   * Produces {@code in} to tier {@code tier} of {@code topic} (past the last: its dead-letter
   * topic) and waits for the ack, retrying while {@code owned}.
   */
  private boolean send(
      String topic,
      int tier,
      Incoming in,
      Throwable error,
      Instant firstFailure,
      String origin,
      BooleanSupplier owned) {
    boolean dlt = tier > tiers.size();
    Instant now = clock.instant();
    RecordHeaders headers = new RecordHeaders();
    for (DeadLetterStore.Header h : in.headers()) {
      if (!OURS.contains(h.name())) {
        headers.add(h.name(), h.value());
      }
    }
    headers.add(ATTEMPT, utf8(Integer.toString(Math.min(tier, tiers.size()))));
    headers.add(FIRST_FAILURE, utf8(firstFailure.toString()));
    headers.add(ERROR, utf8(truncate(String.valueOf(error), 2_000)));
    headers.add(ORIGIN, utf8(origin));
    headers.add(SUBSCRIPTION, utf8(name));
    if (!dlt) {
      headers.add(DUE, utf8(now.plus(tiers.get(tier - 1)).toString()));
    }
    String target =
        dlt
            ? RetryTopicNames.deadLetterTopic(topic, name)
            : RetryTopicNames.retryTopic(topic, name, tier);
    ProducerRecord<byte[], byte[]> r =
        new ProducerRecord<>(target, null, null, in.key(), in.value(), headers);
    return sender.send(r, origin, owned);
  }

  // ---------------------------------------------------------------- the retry consumer

  private void loop() {
    List<String> retryTopics = new ArrayList<>(sources.keySet());
    try {
      consumer.subscribe(
          retryTopics,
          new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
              partitions.forEach(resumeAt::remove);
              partitions.forEach(waited::remove);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
              legacy.onAssigned(consumer, partitions);
            }
          });
      while (running) {
        resumeDue();
        ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(50));
        for (TopicPartition tp : records.partitions()) {
          handlePartition(tp, records.records(tp));
        }
      }
    } catch (WakeupException e) {
      // closing
    } catch (RuntimeException e) {
      log.error("{}: retry consumer failed; closing it", name, e);
    } finally {
      try {
        consumer.close(Duration.ofSeconds(10));
      } catch (RuntimeException ignored) {
        // closing anyway
      }
    }
  }

  private void resumeDue() {
    Instant now = clock.instant();
    List<TopicPartition> due = new ArrayList<>();
    resumeAt.forEach((tp, at) -> {
      if (!at.isAfter(now)) {
        due.add(tp);
      }
    });
    if (!due.isEmpty()) {
      due.forEach(resumeAt::remove);
      due.retainAll(consumer.assignment());
      consumer.resume(due);
    }
  }

  private void handlePartition(TopicPartition tp, List<ConsumerRecord<byte[], byte[]>> rs) {
    Source source = sources.get(tp.topic()); // subscribed to these names only
    String topic = source.topic();
    int tier = source.tier();
    for (ConsumerRecord<byte[], byte[]> r : rs) {
      if (!running) {
        return;
      }
      String owner = last(r, SUBSCRIPTION);
      if (owner != null && !owner.equals(name)) {
        log.warn(
            "{}: {} in {} is a failure of subscription '{}'; passed over",
            name,
            Optional.ofNullable(last(r, ORIGIN)).orElse(position(r)),
            tp,
            owner);
        consumer.commitSync(Map.of(tp, new OffsetAndMetadata(r.offset() + 1)));
        continue;
      }
      Instant now = clock.instant();
      // the record we paused for has waited its (clamped) time: due now, whatever it says
      Instant due = Long.valueOf(r.offset()).equals(waited.remove(tp)) ? now : due(r, tier, now);
      if (due.isAfter(now)) {
        // not yet: wait without blocking other partitions, then read it again
        consumer.seek(tp, r.offset());
        consumer.pause(List.of(tp));
        resumeAt.put(tp, due);
        waited.put(tp, r.offset());
        return;
      }
      retryOne(topic, tier, r);
      consumer.commitSync(Map.of(tp, new OffsetAndMetadata(r.offset() + 1)));
    }
  }

  /**
   * The due time of {@code r}: its header, never later than now + the tier's delay (a forged or
   * corrupt header cannot stall the partition) nor than the record's timestamp + the delay when
   * that timestamp is not in the future, and now if absent or unreadable.
   */
  private Instant due(ConsumerRecord<byte[], byte[]> r, int tier, Instant now) {
    Duration delay = tiers.get(tier - 1);
    Instant latest = now.plus(delay);
    if (r.timestamp() >= 0) {
      Instant written = Instant.ofEpochMilli(r.timestamp());
      if (!written.isAfter(now) && written.plus(delay).isBefore(latest)) {
        latest = written.plus(delay);
      }
    }
    Instant due = parseInstant(last(r, DUE)).orElse(now);
    return due.isAfter(latest) ? latest : due;
  }

  private void retryOne(String topic, int tier, ConsumerRecord<byte[], byte[]> r) {
    Instant now = clock.instant();
    String origin = Optional.ofNullable(last(r, ORIGIN)).orElse(position(r));
    Instant firstFailure =
        parseInstant(last(r, FIRST_FAILURE)).filter(t -> !t.isAfter(now)).orElse(now);
    Incoming in = incoming(topic, r, origin);
    // attempt numbers come from the tier of the topic read, never from a header: 1 + tier
    Throwable error = processor.applyDelayed(in, tier + 1);
    if (error == null) {
      return;
    }
    boolean permanent = error instanceof dev.postbox.core.PermanentMessageException;
    int next = permanent ? tiers.size() + 1 : tier + 1;
    if (next > tiers.size()) {
      processor.giveUpDelayed(in, error, tier + 1, firstFailure);
      log.warn(
          "{}: {} failed after the last retry tier; to {}",
          name,
          origin,
          RetryTopicNames.deadLetterTopic(topic, name));
    } else {
      processor.retried(in);
    }
    send(topic, next, in, error, firstFailure, origin, () -> running);
  }

  /**
   * The record as the main consumer saw it: the original topic (from the retry topic's name), the
   * origin partition and offset when readable, and the headers without ours.
   */
  private static Incoming incoming(String topic, ConsumerRecord<byte[], byte[]> r, String origin) {
    int partition = r.partition();
    long offset = r.offset();
    int at = origin.lastIndexOf('@');
    int dash = at < 0 ? -1 : origin.lastIndexOf('-', at);
    if (dash > 0 && origin.substring(0, dash).equals(topic)) {
      try {
        partition = Integer.parseInt(origin.substring(dash + 1, at));
        offset = Long.parseLong(origin.substring(at + 1));
      } catch (NumberFormatException ignored) {
        partition = r.partition();
        offset = r.offset();
      }
    }
    List<DeadLetterStore.Header> list = new ArrayList<>();
    for (Header h : r.headers()) {
      if (!OURS.contains(h.key())) {
        list.add(new DeadLetterStore.Header(h.key(), h.value()));
      }
    }
    ConsumerRecord<byte[], byte[]> original =
        StoredRecords.rebuild(topic, partition, offset, r.timestamp(), r.key(), r.value(), list);
    return new Incoming(
        topic,
        partition,
        offset,
        () -> KafkaRecords.fromRecord(original),
        r.key(),
        r.value(),
        List.copyOf(list));
  }

  private static String last(ConsumerRecord<byte[], byte[]> r, String header) {
    Header h = r.headers().lastHeader(header);
    return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  private static Optional<Instant> parseInstant(String text) {
    if (text == null) {
      return Optional.empty();
    }
    try {
      return Optional.of(Instant.parse(text.trim()));
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }

  private static String position(ConsumerRecord<?, ?> r) {
    return r.topic() + "-" + r.partition() + "@" + r.offset();
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String truncate(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max);
  }
}
