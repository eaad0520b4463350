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
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The peer relays, doing the same publish as Postbox's relay in the same run: gruelbox
 * transaction-outbox as a polling outbox, and Debezium's embedded PostgreSQL connector reading the
 * Postbox outbox table (the CDC baseline, in {@link DebeziumPeer}). Both publish with the same
 * producer settings.
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
    String topic = env.primedTopic("gruelbox", 6);
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

  /** Debezium: see {@link DebeziumPeer}. */
  public Measurement debezium() throws InterruptedException {
    return new DebeziumPeer(env, config).run();
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
