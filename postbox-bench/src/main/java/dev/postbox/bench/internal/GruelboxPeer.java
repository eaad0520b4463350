package dev.postbox.bench.internal;

import com.gruelbox.transactionoutbox.Dialect;
import com.gruelbox.transactionoutbox.ExecutorSubmitter;
import com.gruelbox.transactionoutbox.Instantiator;
import com.gruelbox.transactionoutbox.Persistor;
import com.gruelbox.transactionoutbox.Submitter;
import com.gruelbox.transactionoutbox.TransactionManager;
import com.gruelbox.transactionoutbox.TransactionOutbox;
import com.gruelbox.transactionoutbox.TransactionOutboxEntry;
import com.gruelbox.transactionoutbox.TransactionOutboxListener;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * gruelbox transaction-outbox (4.2, its unordered default mode) publishing the relay's records to
 * Kafka: each entry is a scheduled {@link KafkaSend#send} call that gruelbox runs, acknowledged,
 * then deletes, in one transaction per entry (how every version up to 7.0 processes an entry).
 *
 * <p>Its throughput levers, as its README and javadoc document them: the {@code Executor} behind
 * its {@link ExecutorSubmitter} (README "Configuration reference": "change the Executor used for
 * submitting work"; {@code ExecutorSubmitter}'s javadoc: a bounded queue of 10,000 or more), which
 * sets how many entries are in flight; {@code flushBatchSize} (entries one {@code flush()} selects;
 * default 4,096); and the path an entry takes: submitted to the executor right after its
 * transaction commits (the default, "processed immediately"), or picked up by {@code flush()}
 * polling (README "Set up the background worker"). Its ordered mode ({@code ordered(topic)}, 5.0
 * and later) runs each topic single-threaded from background flushing only, so it is slower, not a
 * throughput lever. {@link #CANDIDATES} are measured in turn and the fastest is the peer's figure.
 */
final class GruelboxPeer {

  /** How entries reach the executor. */
  enum Path {
    /** Submitted right after the writing transaction commits: gruelbox's default. */
    IMMEDIATE,
    /** A backlog written while submission is held, then picked up by {@code flush()} polling. */
    FLUSH
  }

  /**
   * One configuration of the peer.
   *
   * @param path how entries reach the executor
   * @param workers the submitter's executor threads (entries in flight; the connection pool is
   *     sized to match)
   * @param flushBatchSize entries one {@code flush()} selects
   * @param lingerMs the producer's {@code linger.ms} (every other producer setting is the relay's)
   */
  record Settings(Path path, int workers, int flushBatchSize, int lingerMs) {

    String describe() {
      return String.format(
          Locale.ROOT,
          "%s, ExecutorSubmitter on %d threads (bounded queue 16,384), flushBatchSize %,d,"
              + " producer linger.ms=%d",
          path == Path.IMMEDIATE
              ? "submitted on commit (its default path)"
              : "flush() polling of a written backlog",
          workers,
          flushBatchSize,
          lingerMs);
    }
  }

  /**
   * The configurations measured, in this order, after an untimed warm-up of the first; the fastest
   * is the peer's figure. Its default path with a large executor (64 threads; 16 beside it, in case
   * fewer contend less on 2 cores), with a producer that does not linger (each send is awaited, so
   * a linger only delays it) and with the relay's 5 ms; and {@code flush()} polling at its default
   * {@code flushBatchSize}. One exploratory run of six configurations on a heavily loaded 2-core
   * machine (2026-12-05) could not rank them (the rates rose from run to run as the load changed),
   * so every bench run measures these four and keeps the fastest.
   */
  static final List<Settings> CANDIDATES =
      List.of(
          new Settings(Path.IMMEDIATE, 64, 4_096, 0),
          new Settings(Path.IMMEDIATE, 16, 4_096, 0),
          new Settings(Path.IMMEDIATE, 64, 4_096, 5),
          new Settings(Path.FLUSH, 64, 4_096, 0));

  private static final int WRITE_BATCH = 500;

  private final BenchEnv env;
  private final List<Settings> candidates;

  GruelboxPeer(BenchEnv env) {
    this(env, CANDIDATES);
  }

  GruelboxPeer(BenchEnv env, List<Settings> candidates) {
    this.env = env;
    this.candidates = List.copyOf(candidates);
  }

  /**
   * Measures every candidate on {@code n} entries, after an untimed warm-up of the first on a tenth
   * as many: the fastest, the others in its note.
   */
  Measurement run(int n) throws InterruptedException {
    measure(candidates.get(0), Math.max(100, n / 10));
    Settings best = null;
    double bestRate = -1;
    List<String> all = new ArrayList<>();
    for (Settings s : candidates) {
      double rate = measure(s, n);
      System.err.printf(Locale.ROOT, "bench: gruelbox %,.0f events/s: %s%n", rate, s.describe());
      all.add(String.format(Locale.ROOT, "%,.0f/s (%s)", rate, s.describe()));
      if (rate > bestRate) {
        bestRate = rate;
        best = s;
      }
    }
    String others = all.size() > 1 ? "; measured in turn: " + String.join("; ", all) : "";
    return Measurement.of("gruelbox_events_per_s", bestRate, "events/s")
        .note(
            "gruelbox transaction-outbox 4.2 at its fastest of "
                + candidates.size()
                + " documented configurations: "
                + best.describe()
                + "; "
                + n
                + " entries, each sent (acks=all, idempotent, the relay's records and keys),"
                + " acknowledged and deleted in one transaction per entry; from the first entry"
                + " submitted to the last processed"
                + others);
  }

  private double measure(Settings s, int n) throws InterruptedException {
    Db db = env.database("gruelbox", s.workers() + 2);
    String topic = env.primedTopic("gruelbox", 6);
    ThreadPoolExecutor executor =
        new ThreadPoolExecutor(
            s.workers(), s.workers(), 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(16_384));
    AtomicLong done = new AtomicLong();
    AtomicLong firstSubmitted = new AtomicLong();
    Submitter executorSubmitter = ExecutorSubmitter.builder().executor(executor).build();
    HeldSubmitter submitter =
        new HeldSubmitter(
            (entry, local) -> {
              firstSubmitted.compareAndSet(0, System.nanoTime());
              executorSubmitter.submit(entry, local);
            },
            s.path() == Path.IMMEDIATE);
    Map<String, Object> producerConfig = env.producerConfig();
    producerConfig.put("linger.ms", s.lingerMs());
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer())) {
      KafkaSend sender = new KafkaSend(producer);
      TransactionManager tm = TransactionManager.fromDataSource(db.dataSource());
      TransactionOutbox outbox =
          TransactionOutbox.builder()
              .transactionManager(tm)
              .persistor(Persistor.forDialect(Dialect.POSTGRESQL_9))
              .instantiator(Instantiator.using(type -> sender))
              .submitter(submitter)
              .flushBatchSize(s.flushBatchSize())
              .attemptFrequency(Duration.ofMinutes(10))
              .listener(
                  new TransactionOutboxListener() {
                    @Override
                    public void success(TransactionOutboxEntry entry) {
                      done.incrementAndGet();
                    }
                  })
              .build();
      for (int from = 0; from < n; from += WRITE_BATCH) {
        int first = from;
        tm.inTransaction(() -> {
          for (int i = first; i < Math.min(n, first + WRITE_BATCH); i++) {
            outbox
                .schedule(KafkaSend.class)
                .send(topic, "key-" + (i % BenchEnv.KEYS), BenchEnv.payload(i));
          }
        });
      }
      if (s.path() == Path.FLUSH) {
        // the backlog is due now; from here on gruelbox works as a polling outbox
        BenchEnv.execute(
            db.dataSource(),
            "UPDATE txno_outbox SET nextAttemptTime = now() - interval '1 minute'");
        submitter.release();
      }
      long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
      while (done.get() < n) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("gruelbox: " + done.get() + " of " + n + " after 5 min");
        }
        if (s.path() == Path.IMMEDIATE || !outbox.flush()) {
          Thread.sleep(5);
        }
      }
      return Rate.since(firstSubmitted.get(), n);
    } finally {
      executor.shutdownNow();
      executor.awaitTermination(10, TimeUnit.SECONDS);
      db.dataSource().close();
    }
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

  /**
   * Passes submissions on once released (at once for the immediate path); before, discards them, so
   * that the flush path's backlog is written without being processed.
   */
  private static final class HeldSubmitter implements Submitter {
    private final Submitter delegate;
    private volatile boolean released;

    HeldSubmitter(Submitter delegate, boolean released) {
      this.delegate = delegate;
      this.released = released;
    }

    void release() {
      released = true;
    }

    @Override
    public void submit(
        TransactionOutboxEntry entry, Consumer<TransactionOutboxEntry> localExecutor) {
      if (released) {
        delegate.submit(entry, localExecutor);
      }
    }
  }
}
