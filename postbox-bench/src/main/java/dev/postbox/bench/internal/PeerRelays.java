package dev.postbox.bench.internal;

import com.gruelbox.transactionoutbox.Dialect;
import com.gruelbox.transactionoutbox.Instantiator;
import com.gruelbox.transactionoutbox.Persistor;
import com.gruelbox.transactionoutbox.Submitter;
import com.gruelbox.transactionoutbox.TransactionManager;
import com.gruelbox.transactionoutbox.TransactionOutbox;
import com.gruelbox.transactionoutbox.TransactionOutboxEntry;
import com.gruelbox.transactionoutbox.TransactionOutboxListener;
import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.testkit.PostgresServer;
import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

/**
 * The peer relays, doing the same publish as Postbox's relay in the same run: gruelbox
 * transaction-outbox as a polling outbox, and Debezium's embedded PostgreSQL connector reading the
 * Postbox outbox table (the CDC baseline). Both publish with the same producer settings.
 */
public final class PeerRelays {

  private final BenchEnv env;
  private final BenchConfig config;

  public PeerRelays(BenchEnv env, BenchConfig config) {
    this.env = env;
    this.config = config;
  }

  /**
   * gruelbox: a backlog of scheduled {@link KafkaSend#send} calls (written while the submitter is
   * held), then drained by {@code flush()} polling, 4 worker threads, each entry sent and acked
   * before gruelbox deletes it in its own transaction (its unordered default mode).
   */
  public Measurement gruelbox() throws InterruptedException {
    int n = config.peerRelayEvents();
    Db db = env.database("gruelbox", 8);
    String topic = env.topic("gruelbox", 6);
    ExecutorService workers = Executors.newFixedThreadPool(4);
    AtomicLong done = new AtomicLong();
    HeldSubmitter submitter = new HeldSubmitter(workers);
    try (KafkaProducer<byte[], byte[]> producer = env.producer()) {
      KafkaSend sender = new KafkaSend(producer);
      TransactionManager tm = TransactionManager.fromDataSource(db.dataSource());
      TransactionOutbox outbox =
          TransactionOutbox.builder()
              .transactionManager(tm)
              .persistor(Persistor.forDialect(Dialect.POSTGRESQL_9))
              .instantiator(Instantiator.using(type -> sender))
              .submitter(submitter)
              .attemptFrequency(Duration.ofMinutes(10))
              .listener(
                  new TransactionOutboxListener() {
                    @Override
                    public void success(TransactionOutboxEntry entry) {
                      done.incrementAndGet();
                    }
                  })
              .build();
      for (int from = 0; from < n; from += 500) {
        int first = from;
        tm.inTransaction(() -> {
          for (int i = first; i < Math.min(n, first + 500); i++) {
            outbox
                .schedule(KafkaSend.class)
                .send(topic, "key-" + (i % BenchEnv.KEYS), BenchEnv.payload(i));
          }
        });
      }
      // the backlog is due now; from here on gruelbox works as a polling outbox
      BenchEnv.execute(
          db.dataSource(), "UPDATE txno_outbox SET nextAttemptTime = now() - interval '1 minute'");
      submitter.release();
      long t0 = System.nanoTime();
      long deadline = t0 + Duration.ofMinutes(5).toNanos();
      while (done.get() < n) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("gruelbox: " + done.get() + " of " + n + " after 5 min");
        }
        if (!outbox.flush()) {
          Thread.sleep(10);
        }
      }
      return Measurement.of("gruelbox_events_per_s", Rate.since(t0, n), "events/s")
          .note(
              "gruelbox transaction-outbox "
                  + n
                  + " entries, flush() polling, 4 workers, one transaction per entry");
    } finally {
      workers.shutdownNow();
      workers.awaitTermination(10, TimeUnit.SECONDS);
    }
  }

  /** Debezium: the embedded PostgreSQL connector (pgoutput) streaming new outbox rows to Kafka. */
  public Measurement debezium() throws Exception {
    int n = config.relayEvents();
    Db db = env.database("debezium", 4);
    String topic = env.topic("debezium", 6);
    AtomicLong acked = new AtomicLong();
    AtomicLong firstSeen = new AtomicLong();
    String slot = "bench_" + db.schema().toLowerCase();
    ExecutorService runner = Executors.newSingleThreadExecutor();
    try (KafkaProducer<byte[], byte[]> producer = env.producer();
        DebeziumEngine<RecordChangeEvent<SourceRecord>> engine =
            DebeziumEngine.create(ChangeEventFormat.of(Connect.class))
                .using(debeziumProperties(env.postgres(), db.schema(), slot))
                .notifying((records, committer) -> {
                  firstSeen.compareAndSet(0, System.nanoTime());
                  List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
                  for (RecordChangeEvent<SourceRecord> r : records) {
                    Struct after = after(r.record());
                    if (after != null) {
                      sent.add(producer.send(toRecord(after)));
                    }
                  }
                  Futures.awaitAll(sent);
                  for (RecordChangeEvent<SourceRecord> r : records) {
                    committer.markProcessed(r);
                  }
                  committer.markBatchFinished();
                  acked.addAndGet(countRows(records));
                })
                .build()) {
      runner.execute(engine);
      awaitSlotActive(db, slot);
      BenchEnv.seedOutbox(db, topic, n);
      BenchEnv.awaitCount("debezium", acked::get, n, Duration.ofSeconds(60));
      return Measurement.of("debezium_events_per_s", Rate.since(firstSeen.get(), n), "events/s")
          .note(
              "Debezium "
                  + n
                  + " outbox inserts streamed (pgoutput) and sent to Kafka, from the first change"
                  + " event to the last ack; publishes the payload with key and id only (less work"
                  + " than the relay's CloudEvents mapping), rows are not deleted");
    } finally {
      runner.shutdownNow();
      runner.awaitTermination(30, TimeUnit.SECONDS);
    }
  }

  private static long countRows(List<RecordChangeEvent<SourceRecord>> records) {
    return records.stream().filter(r -> after(r.record()) != null).count();
  }

  private static Struct after(SourceRecord record) {
    if (!(record.value() instanceof Struct value) || value.schema().field("after") == null) {
      return null;
    }
    return value.getStruct("after");
  }

  private static ProducerRecord<byte[], byte[]> toRecord(Struct after) {
    String key = after.getString("msg_key");
    ProducerRecord<byte[], byte[]> record =
        new ProducerRecord<>(
            after.getString("topic"),
            key == null ? null : key.getBytes(StandardCharsets.UTF_8),
            after.getBytes("payload"));
    record.headers().add("ce_id", after.getString("message_id").getBytes(StandardCharsets.UTF_8));
    return record;
  }

  private static Properties debeziumProperties(PostgresServer pg, String schema, String slot) {
    URI uri = URI.create(pg.jdbcUrl().substring("jdbc:".length()));
    Properties p = new Properties();
    p.setProperty("name", "bench-debezium");
    p.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
    p.setProperty("offset.storage", InMemoryOffsetStore.class.getName());
    p.setProperty("offset.flush.interval.ms", "60000");
    p.setProperty("database.hostname", uri.getHost());
    p.setProperty("database.port", Integer.toString(uri.getPort()));
    p.setProperty("database.user", pg.user());
    p.setProperty("database.password", pg.password().orElse(""));
    p.setProperty("database.dbname", uri.getPath().substring(1));
    p.setProperty("topic.prefix", "bench");
    p.setProperty("plugin.name", "pgoutput");
    p.setProperty("slot.name", slot);
    p.setProperty("slot.drop.on.stop", "true");
    p.setProperty("publication.name", slot + "_pub");
    p.setProperty("publication.autocreate.mode", "filtered");
    p.setProperty("table.include.list", schema + ".postbox_outbox");
    p.setProperty("snapshot.mode", "no_data");
    return p;
  }

  private static void awaitSlotActive(Db db, String slot) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (System.nanoTime() < deadline) {
      try (Connection c = db.dataSource().getConnection();
          PreparedStatement ps =
              c.prepareStatement("SELECT active FROM pg_replication_slots WHERE slot_name = ?")) {
        ps.setString(1, slot);
        try (ResultSet rs = ps.executeQuery()) {
          if (rs.next() && rs.getBoolean(1)) {
            return;
          }
        }
      } catch (SQLException e) {
        throw new IllegalStateException("cannot read pg_replication_slots", e);
      }
      Thread.sleep(50);
    }
    throw new IllegalStateException("Debezium did not start streaming from slot " + slot);
  }

  /** The call gruelbox records and replays: one synchronous, acknowledged send. */
  public static class KafkaSend {
    private final KafkaProducer<byte[], byte[]> producer;

    /** For gruelbox's proxy; never used to send. */
    public KafkaSend() {
      this(null);
    }

    KafkaSend(KafkaProducer<byte[], byte[]> producer) {
      this.producer = producer;
    }

    /** Sends one record and waits for its acknowledgement. */
    public void send(String topic, String key, String payload) {
      try {
        producer
            .send(
                new ProducerRecord<>(
                    topic,
                    key.getBytes(StandardCharsets.UTF_8),
                    payload.getBytes(StandardCharsets.UTF_8)))
            .get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while sending", e);
      } catch (ExecutionException e) {
        throw new IllegalStateException("send failed", e.getCause());
      }
    }
  }

  /** Discards the immediate post-commit submissions while the backlog is written. */
  private static final class HeldSubmitter implements Submitter {
    private final ExecutorService workers;
    private volatile boolean released;

    HeldSubmitter(ExecutorService workers) {
      this.workers = workers;
    }

    void release() {
      released = true;
    }

    @Override
    public void submit(
        TransactionOutboxEntry entry,
        java.util.function.Consumer<TransactionOutboxEntry> localExecutor) {
      if (released) {
        workers.execute(() -> localExecutor.accept(entry));
      }
    }
  }
}
