package dev.postbox.bench.internal;

import static java.nio.charset.StandardCharsets.US_ASCII;

import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.kafka.KafkaRecords;
import dev.postbox.kafka.KafkaSubscriber;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.listener.BatchMessageListener;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

/**
 * The two Kafka consumers of the end-to-end race, each writing one dedupe row and one effect row
 * per message in one transaction per batch, and each reporting its effects' commits to an {@link
 * E2eTimes}: our {@code EFFECTIVELY_ONCE} batch consumer (as the consumer group's batch race wires
 * it, {@link ConsumerBench}) and Spring Kafka's batch listener with the same dedupe and effect
 * ({@link #applyBatch}, which Spring AMQP's listener in the RabbitMQ peer shares, {@link
 * E2eRabbitConsumers}).
 */
final class E2eConsumers {

  private static final String INSERT_EFFECT = "INSERT INTO bench_effect VALUES (?, ?, ?)";
  private static final AtomicInteger GROUPS = new AtomicInteger();
  private static final Duration READY = Duration.ofSeconds(60);

  private E2eConsumers() {}

  /** How our consumer is configured (for the notes). */
  static final String OURS_HOW =
      "our EFFECTIVELY_ONCE batch consumer (batches of up to "
          + ConsumerBench.BATCH_SIZE
          + ", key order, concurrency 32, max in flight "
          + ConsumerBench.BATCH_MAX_IN_FLIGHT
          + "): inbox records + effect INSERTs in one transaction per batch";

  /** How Spring's listener is configured (for the notes). */
  static final String SPRING_HOW =
      "Spring Kafka's ConcurrentMessageListenerContainer, concurrency "
          + ConsumerBench.PARTITIONS
          + ", batch listener: per poll batch one JDBC transaction with the dedupe INSERTs (ON"
          + " CONFLICT DO NOTHING on the ce_id header's message id) and the new ones' effect"
          + " INSERTs, each a JDBC batch";

  /** Our batch consumer on {@code topic}, started and assigned. */
  static AutoCloseable ours(BenchEnv env, Db db, String topic, E2eTimes times)
      throws InterruptedException {
    Subscription s =
        Subscription.builder("bench-e2e-eob-" + GROUPS.incrementAndGet())
            .topics(topic)
            .concurrency(32)
            .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
            .batchSize(ConsumerBench.BATCH_SIZE)
            .maxInFlight(ConsumerBench.BATCH_MAX_IN_FLIGHT)
            .build();
    KafkaSubscriber.Builder b =
        KafkaSubscriber.builder(env.bootstrap(), s)
            .inbox(new Recording(PostgresInboxStore.create(db.dataSource()), times))
            .batchHandler(deliveries -> {
              Connection c = deliveries.get(0).connection().orElseThrow();
              try (PreparedStatement ps = c.prepareStatement(INSERT_EFFECT)) {
                for (Delivery d : deliveries) {
                  ps.setString(1, "e2e-eob");
                  ps.setObject(2, d.message().id());
                  ps.setString(3, d.message().key().orElse(null));
                  ps.addBatch();
                }
                ps.executeBatch();
              }
            });
    times.consumerProperties().forEach(b::consumerProperty);
    KafkaSubscriber subscriber = b.build();
    subscriber.start();
    try {
      BenchEnv.awaitCount(
          "our consumer's assignment", () -> subscriber.assignment().size(), 1, READY);
    } catch (RuntimeException | InterruptedException e) {
      subscriber.close();
      throw e;
    }
    return subscriber;
  }

  /** Spring's batch listener on {@code topic}, started and assigned. */
  static AutoCloseable spring(BenchEnv env, Db db, String topic, E2eTimes times)
      throws InterruptedException {
    dedupeTable(db);
    String group = "bench-e2e-spring-" + GROUPS.incrementAndGet();
    Map<String, Object> props = new HashMap<>(times.consumerProperties());
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrap());
    props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    ContainerProperties cp = new ContainerProperties(topic);
    cp.setMessageListener(
        (BatchMessageListener<byte[], byte[]>) records -> apply(db, group, records, times));
    ConcurrentMessageListenerContainer<byte[], byte[]> container =
        new ConcurrentMessageListenerContainer<>(
            new DefaultKafkaConsumerFactory<>(
                props, new ByteArrayDeserializer(), new ByteArrayDeserializer()),
            cp);
    container.setConcurrency(ConsumerBench.PARTITIONS);
    container.setCommonErrorHandler(new DefaultErrorHandler(new FixedBackOff(100, 2)));
    container.start();
    try {
      BenchEnv.awaitCount(
          "Spring's assignment", () -> container.getAssignedPartitions().size(), 1, READY);
    } catch (RuntimeException | InterruptedException e) {
      container.stop();
      throw e;
    }
    return container::stop;
  }

  /** Spring's dedupe table: one row per consumer and message id. */
  static void dedupeTable(Db db) {
    BenchEnv.execute(
        db.dataSource(),
        "CREATE TABLE IF NOT EXISTS bench_spring_dedupe (consumer text NOT NULL,"
            + " message_id uuid NOT NULL, PRIMARY KEY (message_id, consumer))");
  }

  /** One poll batch in one transaction: the dedupe rows, then the new messages' effects. */
  private static void apply(
      Db db, String group, List<ConsumerRecord<byte[], byte[]>> records, E2eTimes times) {
    UUID[] ids = new UUID[records.size()];
    String[] keys = new String[ids.length];
    for (int i = 0; i < ids.length; i++) {
      ConsumerRecord<byte[], byte[]> r = records.get(i);
      ids[i] =
          UUID.fromString(new String(r.headers().lastHeader(KafkaRecords.CE_ID).value(), US_ASCII));
      keys[i] = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
    }
    applyBatch(db, group, "e2e-spring", ids, keys, times);
  }

  /**
   * Spring's listener's work for one batch, in one JDBC transaction: a dedupe row per message
   * ({@code group}, id; ON CONFLICT DO NOTHING) as one JDBC batch, then the effect rows ({@code
   * effect}, id, key) of the new ones as another; reports their effects' commit to {@code times}.
   */
  static void applyBatch(
      Db db, String group, String effect, UUID[] ids, String[] keys, E2eTimes times) {
    boolean[] fresh = new boolean[ids.length];
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      try (PreparedStatement dedupe =
              c.prepareStatement(
                  "INSERT INTO bench_spring_dedupe VALUES (?, ?) ON CONFLICT DO NOTHING");
          PreparedStatement effects = c.prepareStatement(INSERT_EFFECT)) {
        for (UUID id : ids) {
          dedupe.setString(1, group);
          dedupe.setObject(2, id);
          dedupe.addBatch();
        }
        int[] inserted = dedupe.executeBatch();
        for (int i = 0; i < inserted.length; i++) {
          fresh[i] = inserted[i] != 0;
          if (fresh[i]) {
            effects.setString(1, effect);
            effects.setObject(2, ids[i]);
            effects.setString(3, keys[i]);
            effects.addBatch();
          }
        }
        effects.executeBatch();
        c.commit();
      } catch (SQLException e) {
        c.rollback();
        throw e;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    long now = E2eTimes.nowMicros();
    for (int i = 0; i < ids.length; i++) {
      if (fresh[i]) {
        times.applied(ids[i], now);
      }
    }
  }

  /** Our inbox, reporting each message's commit (when the store's transaction returned). */
  record Recording(InboxStore delegate, E2eTimes times) implements InboxStore {
    @Override
    public boolean processOnce(String consumer, UUID messageId, Work work) throws Exception {
      boolean applied = delegate.processOnce(consumer, messageId, work);
      done(Set.of(messageId));
      return applied;
    }

    @Override
    public Outcome processOnce(String consumer, UUID messageId, byte[] sha256, Work work)
        throws Exception {
      Outcome o = delegate.processOnce(consumer, messageId, sha256, work);
      done(Set.of(messageId));
      return o;
    }

    @Override
    public Processed processOnceWithResult(
        String consumer, UUID messageId, byte[] sha256, ResultWork work) throws Exception {
      Processed p = delegate.processOnceWithResult(consumer, messageId, sha256, work);
      done(Set.of(messageId));
      return p;
    }

    @Override
    public Set<UUID> processBatch(String consumer, List<UUID> messageIds, BatchWork work)
        throws Exception {
      Set<UUID> fresh = delegate.processBatch(consumer, messageIds, work);
      done(messageIds);
      return fresh;
    }

    @Override
    public boolean advanceVersion(Connection connection, String entity, long version)
        throws Exception {
      return delegate.advanceVersion(connection, entity, version);
    }

    @Override
    public int purge(String consumer, Duration age, int limit) {
      return delegate.purge(consumer, age, limit);
    }

    private void done(java.util.Collection<UUID> ids) {
      long now = E2eTimes.nowMicros();
      for (UUID id : ids) {
        times.applied(id, now);
      }
    }
  }
}
