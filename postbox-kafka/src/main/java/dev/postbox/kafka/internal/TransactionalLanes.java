package dev.postbox.kafka.internal;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.spi.LaneFencedException;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.RelayPublisher.PendingPublish;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.KafkaRecords;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transactional relay's publishing: one transactional producer per owned lane ({@link
 * LaneProducer}), initialised before the relay's first claim under the lane's lease, one Kafka
 * transaction per lane per batch, and each row reported acknowledged only after its lane's
 * transaction committed (so the relay marks nothing a {@code read_committed} reader cannot see).
 *
 * <p><b>Fencing.</b> The next owner of a lane initialises a producer with the same {@code
 * transactional.id}; the broker then aborts this owner's open transaction and refuses its later
 * sends and commits ({@link TransactionErrors.Kind#FENCED}): its rows fail with {@link
 * LaneFencedException} (the relay gives the lane up) and this process never initialises that lane
 * again under that lease (it would fence the new owner in turn). A producer is initialised only in
 * {@link #lanesOwned}, which the relay calls before each claim: every row sent was claimed, under
 * the lease, after its producer's {@code initTransactions}, so an owner that initialised after its
 * successor finds no rows of the lane to claim.
 *
 * <p><b>Errors</b> (Kafka 4.x classes): fenced: close the producer, fail the lane's rows with
 * {@link LaneFencedException}, never mark; abortable (a record's error, {@code
 * TransactionAbortableException}): abort the transaction, the rows are retried with the same
 * producer; fatal (anything else, a commit that timed out): close the producer, the rows are
 * retried, the producer is created again before the next claim.
 *
 * <p>Used by the relay's publishing thread; commits run in parallel on virtual threads.
 */
public final class TransactionalLanes implements AutoCloseable {

  /** How the publisher classifies one record's failure. */
  @FunctionalInterface
  public interface RecordFailures {
    /**
     * The outcome of a record that failed with {@code error}; {@code beforeSending} when the
     * producer refused it before it entered the producer.
     */
    PublishOutcome.Failed classify(Throwable error, boolean beforeSending, String topic);
  }

  private static final Logger log = LoggerFactory.getLogger(TransactionalLanes.class);

  private final Map<String, Object> config;
  private final String prefix;
  private final Duration commitTimeout;
  private final RecordFailures failures;
  private final Function<Map<String, Object>, Producer<byte[], byte[]>> factory;
  private final Ticker ticker;
  private final Map<Integer, LaneProducer> producers = new ConcurrentHashMap<>();
  // lane -> the epoch under which the broker fenced this process's producer of it
  private final Map<Integer, Long> fencedAt = new ConcurrentHashMap<>();
  private final ExecutorService workers = Executors.newVirtualThreadPerTaskExecutor();

  /**
   * @param config the producer configuration (idempotence and {@code acks=all} set); each lane adds
   *     its {@code transactional.id}
   * @param prefix the lanes' {@code transactional.id} prefix
   * @param commitTimeout how long a commit may take, its retries after a timeout included
   */
  public TransactionalLanes(
      Map<String, Object> config,
      String prefix,
      Duration commitTimeout,
      RecordFailures failures,
      Function<Map<String, Object>, Producer<byte[], byte[]>> factory,
      Ticker ticker) {
    this.config = Map.copyOf(config);
    this.prefix = prefix;
    this.commitTimeout = commitTimeout;
    this.failures = failures;
    this.factory = factory;
    this.ticker = ticker;
  }

  /**
   * Closes the producers of lanes no longer owned (or owned under another lease), then initialises
   * a producer for every owned lease that has none (in parallel), except a lease under which this
   * process was fenced. A failed initialisation is logged; its lane's rows fail until a later turn
   * initialises it.
   */
  public void lanesOwned(Collection<LaneLease> leases) throws InterruptedException {
    Map<Integer, LaneLease> want = new HashMap<>();
    for (LaneLease l : leases) {
      want.put(l.lane(), l);
    }
    for (LaneProducer p : List.copyOf(producers.values())) {
      if (!p.lease.equals(want.get(p.lease.lane()))) {
        producers.remove(p.lease.lane(), p);
        workers.execute(p::close);
      }
    }
    fencedAt
        .entrySet()
        .removeIf(e -> {
          LaneLease l = want.get(e.getKey());
          return l == null || l.epoch() > e.getValue();
        });
    List<Callable<Void>> opens = new ArrayList<>();
    for (LaneLease l : want.values()) {
      if (!producers.containsKey(l.lane()) && !fencedAt.containsKey(l.lane())) {
        opens.add(() -> {
          open(l);
          return null;
        });
      }
    }
    if (!opens.isEmpty()) {
      workers.invokeAll(opens);
    }
  }

  private void open(LaneLease l) {
    try {
      producers.put(l.lane(), LaneProducer.open(config, prefix, l, factory));
      log.debug("lane {} epoch {}: transactional producer initialised", l.lane(), l.epoch());
    } catch (RuntimeException e) {
      if (TransactionErrors.classify(e) == TransactionErrors.Kind.FENCED) {
        fencedAt.put(l.lane(), l.epoch());
      }
      log.warn(
          "lane {}: initialising its transactional producer {} failed; retried before the next"
              + " claim: {}",
          l.lane(),
          LaneProducer.transactionalId(prefix, l.lane()),
          e.toString());
    }
  }

  /** One lane's part of a batch. */
  private static final class LaneBatch {
    final LaneLease lease;
    final List<Integer> indices = new ArrayList<>();
    final AtomicReference<Throwable> abortCause = new AtomicReference<>();
    LaneProducer producer; // null when nothing was sent
    CountDownLatch callbacks;

    LaneBatch(LaneLease lease) {
      this.lease = lease;
    }
  }

  /**
   * Begins one transaction per lane of the batch and sends each lane's records in order through its
   * producer; {@link PendingPublish#outcomes()} commits the transactions (in parallel) and reports
   * a lane's records acknowledged only if its commit succeeded.
   */
  public PendingPublish send(List<Message> messages, List<LaneLease> leases) {
    int n = messages.size();
    PublishOutcome[] outcomes = new PublishOutcome[n];
    Map<Integer, LaneBatch> lanes = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      LaneLease l = leases.get(i);
      lanes.computeIfAbsent(l.lane(), k -> new LaneBatch(l)).indices.add(i);
    }
    int[] sent = {0};
    for (LaneBatch b : lanes.values()) {
      start(b, messages, outcomes, sent, n);
    }
    return () -> finish(lanes.values(), outcomes);
  }

  private void start(
      LaneBatch b, List<Message> messages, PublishOutcome[] outcomes, int[] sent, int n) {
    LaneProducer lp = producers.get(b.lease.lane());
    Throwable unusable = null;
    if (fencedAt.containsKey(b.lease.lane())) {
      unusable = fenced(b.lease, null);
    } else if (lp == null || !lp.lease.equals(b.lease)) {
      unusable =
          new IllegalStateException(
              "no transactional producer for lane " + b.lease.lane() + " (not initialised yet)");
    } else {
      try {
        lp.producer.beginTransaction();
      } catch (RuntimeException e) {
        unusable = failLane(lp, e);
      }
    }
    if (unusable != null) {
      for (int i : b.indices) {
        outcomes[i] =
            new PublishOutcome.Failed(unusable, false); // LaneFencedException: the lane is lost
      }
      return;
    }
    b.producer = lp;
    b.callbacks = new CountDownLatch(b.indices.size());
    Thread sender = Thread.currentThread();
    Throwable[] refused = new Throwable[1];
    for (int i : b.indices) {
      if (sent[0]++ == n / 2) {
        CrashPoints.hit(CrashPoints.RELAY_MID_BATCH);
      }
      Message m = messages.get(i);
      if (b.abortCause.get() != null) {
        outcomes[i] =
            new PublishOutcome.Failed(
                new IllegalStateException("not sent: its lane's transaction is aborted"), false);
        b.callbacks.countDown();
        continue;
      }
      ProducerRecord<byte[], byte[]> record = RelayHeaders.stamp(KafkaRecords.toRecord(m), b.lease);
      refused[0] = null;
      Throwable thrown = null;
      try {
        lp.producer.send(
            record,
            (metadata, error) -> {
              if (error != null && Thread.currentThread() == sender) {
                refused[0] = error;
                return;
              }
              if (error == null) {
                outcomes[i] =
                    new PublishOutcome.Acknowledged(metadata.partition(), metadata.offset());
              } else {
                outcomes[i] = failures.classify(error, false, m.topic());
                b.abortCause.compareAndSet(null, error);
              }
              b.callbacks.countDown();
            });
      } catch (RuntimeException e) {
        thrown = e;
      }
      Throwable error = thrown != null ? thrown : refused[0];
      if (error != null) {
        // a refused record leaves the transaction abortable: the lane's later records wait
        outcomes[i] = failures.classify(error, true, m.topic());
        b.abortCause.compareAndSet(null, error);
        b.callbacks.countDown();
      }
    }
  }

  private List<PublishOutcome> finish(Collection<LaneBatch> lanes, PublishOutcome[] outcomes)
      throws InterruptedException {
    List<Future<?>> running = new ArrayList<>();
    for (LaneBatch b : lanes) {
      if (b.producer != null) {
        running.add(
            workers.submit(() -> {
              settle(b, outcomes);
              return null;
            }));
      }
    }
    for (Future<?> f : running) {
      try {
        f.get();
      } catch (ExecutionException e) {
        log.warn("settling a lane's transaction failed", e.getCause());
      }
    }
    PublishOutcome[] out = new PublishOutcome[outcomes.length];
    for (int i = 0; i < out.length; i++) {
      out[i] =
          outcomes[i] != null
              ? outcomes[i]
              : new PublishOutcome.Failed(new IllegalStateException("no outcome"), false);
    }
    return Arrays.asList(out);
  }

  /** Commits (or aborts) one lane's transaction and settles its records' outcomes. */
  private void settle(LaneBatch b, PublishOutcome[] outcomes) throws InterruptedException {
    LaneProducer lp = b.producer;
    Throwable cause = b.abortCause.get();
    if (cause == null) {
      try {
        lp.commit(ticker, commitTimeout);
        awaitCallbacks(b, lp);
        for (int i : b.indices) {
          if (!(outcomes[i] instanceof PublishOutcome.Acknowledged)) {
            outcomes[i] =
                new PublishOutcome.Failed(
                    new IllegalStateException("committed without an acknowledgement"), false);
          }
        }
        return;
      } catch (org.apache.kafka.common.errors.TimeoutException e) {
        cause = failLane(lp, new IllegalStateException("commit timed out: outcome unknown", e));
      } catch (RuntimeException e) {
        cause = e;
      }
    }
    Throwable reported = cause;
    if (TransactionErrors.classify(cause) == TransactionErrors.Kind.ABORTABLE
        && producers.get(lp.lease.lane()) == lp) {
      try {
        lp.producer.abortTransaction();
      } catch (RuntimeException e) {
        reported = failLane(lp, e);
      }
    } else {
      reported = failLane(lp, cause);
    }
    awaitCallbacks(b, lp);
    for (int i : b.indices) {
      if (!(outcomes[i] instanceof PublishOutcome.Failed f && f.unpublishable())) {
        outcomes[i] = new PublishOutcome.Failed(reported, false);
      }
    }
  }

  private void awaitCallbacks(LaneBatch b, LaneProducer lp) throws InterruptedException {
    if (!b.callbacks.await(commitTimeout.toMillis() + 30_000, TimeUnit.MILLISECONDS)) {
      failLane(lp, new IllegalStateException("no outcome within the delivery timeout"));
    }
  }

  /**
   * Closes a failed producer and returns the error its lane's rows report: a {@link
   * LaneFencedException} when fenced (the lane is not initialised again under this lease), else
   * {@code e} (an abortable error that could not be aborted, or fatal: the producer is created
   * again before the next claim).
   */
  private Throwable failLane(LaneProducer lp, Throwable e) {
    boolean fenced = TransactionErrors.classify(e) == TransactionErrors.Kind.FENCED;
    if (fenced) {
      fencedAt.put(lp.lease.lane(), lp.lease.epoch());
    }
    if (producers.remove(lp.lease.lane(), lp)) {
      log.warn(
          "lane {} epoch {}: closing its transactional producer ({}): {}",
          lp.lease.lane(),
          lp.lease.epoch(),
          fenced ? "fenced: another relay owns the lane" : "fatal error",
          e.toString());
    }
    lp.close();
    return fenced ? fenced(lp.lease, e) : e;
  }

  private LaneFencedException fenced(LaneLease l, Throwable cause) {
    return new LaneFencedException(
        l.lane(),
        l.epoch(),
        "lane "
            + l.lane()
            + " epoch "
            + l.epoch()
            + ": the broker fenced its transactional producer "
            + LaneProducer.transactionalId(prefix, l.lane())
            + "; another relay owns the lane",
        cause);
  }

  /** Lanes with a live producer (for tests and metrics). */
  public int openLanes() {
    return producers.size();
  }

  /** Closes every producer, in parallel, waiting up to {@code timeout} for each. */
  @Override
  public void close() {
    List<Callable<Void>> closes = new ArrayList<>();
    for (LaneProducer p : producers.values()) {
      closes.add(() -> {
        p.producer.close(Duration.ofSeconds(5));
        return null;
      });
    }
    producers.clear();
    try {
      workers.invokeAll(closes);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    workers.shutdown();
  }
}
