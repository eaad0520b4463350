package dev.postbox.jdbc.cdc.internal;

import dev.postbox.core.Backoff;
import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.spi.OutboxRecord;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.core.time.Sleeper;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.LongPredicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes the streamed outbox rows through a {@link RelayPublisher}, in stream (that is, commit)
 * order, in batches of at most the batch size, with up to {@code maxInFlight} batches in flight
 * ({@link RelayPublisher#sendAfter}); batches are settled strictly in order, and only their
 * acknowledged prefix, so the slot is never confirmed past an event that was not acknowledged
 * together with every event before it.
 *
 * <p>Of each attempt, the acknowledged prefix and the rows that can never be published are handed
 * to the marker ({@link PublishedRowMarker#submit}); from the first row failed transiently on, the
 * rest of the batch is sent again after a backoff (with later rows of other keys that the broker
 * had already taken: duplicates, never a row of a key ahead of an earlier one that was not
 * acknowledged). A row the broker can never take, or one that cannot be read into a message, is
 * marked failed and skipped (the polling relay's {@code UnpublishableRows.SKIP}; holding its key is
 * not implemented for CDC yet). Runs on one thread.
 */
public final class PublishLoop {

  private static final Logger log = LoggerFactory.getLogger(PublishLoop.class);

  /** After the broker acknowledged a batch, before any of it is marked or confirmed. */
  public static final String CRASH_AFTER_ACK_BEFORE_MARK = CrashPoints.CDC_AFTER_ACK_BEFORE_MARK;

  /** The same, for a batch that ends inside a transaction whose next event is streamed already. */
  public static final String CRASH_MID_TRANSACTION = CrashPoints.CDC_MID_TRANSACTION;

  private final BlockingQueue<CdcEvent> queue;
  private final RelayPublisher publisher;
  private final Consumer<PublishedRowMarker.Settled> marker;
  private final int batchSize;
  private final Backoff backoff;
  private final Sleeper sleeper;
  private final BooleanSupplier running;
  private final LongPredicate holds;
  private final int maxInFlight;
  private final Duration linger;
  private final ArrayDeque<Flight> flights = new ArrayDeque<>();
  final AtomicLong dropped = new AtomicLong();
  final AtomicLong published = new AtomicLong();
  final AtomicLong publishFailures = new AtomicLong();
  final AtomicLong unpublishable = new AtomicLong();
  final AtomicLong batches = new AtomicLong();

  public PublishLoop(
      BlockingQueue<CdcEvent> queue,
      RelayPublisher publisher,
      Consumer<PublishedRowMarker.Settled> marker,
      int batchSize,
      Backoff backoff,
      Sleeper sleeper,
      BooleanSupplier running) {
    this(
        queue,
        publisher,
        marker,
        batchSize,
        backoff,
        sleeper,
        running,
        epoch -> true,
        1,
        Duration.ZERO);
  }

  /**
   * A loop that publishes only events whose lease epoch {@code holds} tests true, checked before
   * each send and again before the outcomes are settled: an ex-owner sends no new batch and settles
   * nothing once its lease is gone. With nothing in flight, a batch that is not full waits {@code
   * linger} after its first event for more to join it (zero: sent at once).
   */
  public PublishLoop(
      BlockingQueue<CdcEvent> queue,
      RelayPublisher publisher,
      Consumer<PublishedRowMarker.Settled> marker,
      int batchSize,
      Backoff backoff,
      Sleeper sleeper,
      BooleanSupplier running,
      LongPredicate holds,
      int maxInFlight,
      Duration linger) {
    this.holds = holds;
    this.maxInFlight = maxInFlight;
    this.linger = linger;
    this.queue = queue;
    this.publisher = publisher;
    this.marker = marker;
    this.batchSize = batchSize;
    this.backoff = backoff;
    this.sleeper = sleeper;
    this.running = running;
  }

  /** A batch handed to the publisher, its outcomes not yet settled. */
  private record Flight(List<CdcEvent> events, RelayPublisher.PendingPublish pending) {}

  /**
   * Publishes until the relay stops, with up to {@code maxInFlight} batches in flight; the batches
   * in flight are settled first.
   */
  public void run() {
    try {
      while (running.getAsBoolean()) {
        List<CdcEvent> batch = null;
        if (flights.size() < maxInFlight) {
          batch = next(flights.isEmpty() ? 20 : 0);
        }
        if (batch != null) {
          if (maxInFlight == 1) {
            publish(batch);
          } else {
            send(batch);
          }
        } else if (!flights.isEmpty()) {
          // below the in-flight limit, no batch means nothing was streamed meanwhile: the
          // publisher need not hold the records in flight back for more to join them
          settleHead(flights.size() < maxInFlight);
        }
      }
      while (!flights.isEmpty()) {
        settleHead(true);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The next batch of events of a held epoch, waiting up to {@code waitMs} for its first; null if
   * none. With nothing in flight, a batch that is not full waits the linger for more, so that one
   * produce request carries every row streamed meanwhile (off by default: on 2 shared cores it cost
   * latency and saved no CPU; see {@code CdcRelay.Builder#batchLinger}).
   */
  private List<CdcEvent> next(long waitMs) throws InterruptedException {
    CdcEvent first = waitMs > 0 ? queue.poll(waitMs, TimeUnit.MILLISECONDS) : queue.poll();
    if (first == null) {
      return null;
    }
    List<CdcEvent> batch = new ArrayList<>(batchSize);
    batch.add(first);
    queue.drainTo(batch, batchSize - 1);
    if (linger.isPositive() && flights.isEmpty() && batch.size() < batchSize) {
      sleeper.sleep(linger);
      queue.drainTo(batch, batchSize - batch.size());
    }
    dropStale(batch);
    return batch.isEmpty() ? null : batch;
  }

  /** Hands a batch to the publisher behind the batches in flight. */
  private void send(List<CdcEvent> batch) throws InterruptedException {
    List<Message> messages = messages(batch);
    RelayPublisher.PendingPublish pending;
    try {
      if (messages.isEmpty()) {
        pending = List::of;
      } else if (flights.isEmpty()) {
        pending = publisher.send(messages);
      } else {
        pending = publisher.sendAfter(flights.peekLast().pending(), messages);
      }
    } catch (RuntimeException e) {
      log.warn("CDC relay: sending {} rows failed", messages.size(), e);
      List<RelayPublisher.PublishOutcome> failed =
          messages.stream()
              .map(m ->
                  (RelayPublisher.PublishOutcome)
                      new RelayPublisher.PublishOutcome.Failed(e, false))
              .toList();
      pending = () -> failed;
    }
    flights.addLast(new Flight(batch, pending));
  }

  /**
   * Settles the oldest batch in flight: its acknowledged prefix goes to the marker (so the slot is
   * confirmed only up to events whose every predecessor was acknowledged). After a failure the rest
   * of it and every later batch in flight are published again, synchronously, from the first failed
   * row on.
   */
  private void settleHead(boolean idle) throws InterruptedException {
    Flight head = flights.removeFirst();
    long epoch = head.events().get(0).epoch();
    List<RelayPublisher.PublishOutcome> outcomes = outcomesOf(head, idle);
    CrashPoints.hit(CRASH_AFTER_ACK_BEFORE_MARK);
    if (CrashPoints.enabled()
        && endsMidTransaction(
            head.events(),
            flights.isEmpty() ? queue.peek() : flights.peekFirst().events().get(0))) {
      CrashPoints.hit(CRASH_MID_TRANSACTION);
    }
    if (!holds.test(epoch)) {
      long n = head.events().size();
      for (Flight f : flights) {
        n += f.events().size();
      }
      flights.clear();
      dropped.addAndGet(n);
      log.warn("CDC relay: the slot lease was lost during a publish; nothing of it is settled");
      return;
    }
    int settled = outcomes == null ? 0 : settle(head.events(), outcomes);
    batches.incrementAndGet();
    if (settled == head.events().size()) {
      return;
    }
    List<CdcEvent> remaining =
        new ArrayList<>(head.events().subList(settled, head.events().size()));
    while (!flights.isEmpty()) {
      Flight later = flights.removeFirst();
      outcomesOf(later, true); // nothing of it is settled: it comes again after the failed row
      remaining.addAll(later.events());
    }
    publishFailures.addAndGet(remaining.size());
    if (!running.getAsBoolean()) {
      return; // not confirmed: streamed again after a restart
    }
    log.warn(
        "CDC relay: {} rows not acknowledged; retrying from the first (attempt 1)",
        remaining.size());
    sleeper.sleep(backoff.delay(1, ThreadLocalRandom.current()));
    publish(remaining);
  }

  /**
   * {@code f}'s outcomes; when {@code idle} (the relay has nothing more to send for now), the
   * publisher sends what it holds back at once ({@link
   * RelayPublisher.PendingPublish#outcomesWhenIdle}).
   */
  private List<RelayPublisher.PublishOutcome> outcomesOf(Flight f, boolean idle)
      throws InterruptedException {
    List<RelayPublisher.PublishOutcome> outcomes;
    try {
      outcomes = idle ? f.pending().outcomesWhenIdle() : f.pending().outcomes();
    } catch (RuntimeException e) {
      log.warn("CDC relay: publishing {} rows failed", f.events().size(), e);
      return null;
    }
    int expected = messages(f.events()).size();
    if (outcomes.size() != expected) {
      log.error(
          "CDC relay: the publisher returned {} outcomes for {} messages; retrying the batch",
          outcomes.size(),
          expected);
      return null;
    }
    return outcomes;
  }

  private static List<Message> messages(List<CdcEvent> events) {
    List<Message> messages = new ArrayList<>(events.size());
    for (CdcEvent e : events) {
      if (e.record().readable()) {
        messages.add(e.record().message());
      }
    }
    return messages;
  }

  /** Drops the events of an epoch this instance no longer holds (the successor streams them). */
  private void dropStale(List<CdcEvent> batch) {
    int before = batch.size();
    batch.removeIf(e -> !holds.test(e.epoch()));
    if (batch.size() < before) {
      dropped.addAndGet(before - batch.size());
      log.warn(
          "CDC relay: {} streamed rows dropped unpublished: the slot lease is gone",
          before - batch.size());
    }
  }

  private void publish(List<CdcEvent> batch) throws InterruptedException {
    List<CdcEvent> remaining = batch;
    int failures = 0;
    long epoch = batch.get(0).epoch();
    while (!remaining.isEmpty()) {
      if (!holds.test(epoch)) {
        dropped.addAndGet(remaining.size());
        return; // the successor streams them again
      }
      List<Message> messages = new ArrayList<>(remaining.size());
      for (CdcEvent e : remaining) {
        if (e.record().readable()) {
          messages.add(e.record().message());
        }
      }
      List<PublishOutcome> outcomes;
      try {
        outcomes = messages.isEmpty() ? List.of() : publisher.publish(messages);
      } catch (RuntimeException e) {
        log.warn("CDC relay: publishing {} rows failed", messages.size(), e);
        outcomes = null;
      }
      if (outcomes != null && outcomes.size() != messages.size()) {
        log.error(
            "CDC relay: the publisher returned {} outcomes for {} messages; retrying the batch",
            outcomes.size(),
            messages.size());
        outcomes = null;
      }
      CrashPoints.hit(CRASH_AFTER_ACK_BEFORE_MARK);
      if (CrashPoints.enabled() && endsMidTransaction(remaining, queue.peek())) {
        CrashPoints.hit(CRASH_MID_TRANSACTION);
      }
      if (!holds.test(epoch)) {
        dropped.addAndGet(remaining.size());
        log.warn("CDC relay: the slot lease was lost during a publish; nothing of it is settled");
        return;
      }
      int settled = outcomes == null ? 0 : settle(remaining, outcomes);
      batches.incrementAndGet();
      if (settled == remaining.size()) {
        return;
      }
      failures++;
      publishFailures.addAndGet(remaining.size() - settled);
      remaining = remaining.subList(settled, remaining.size());
      if (!running.getAsBoolean()) {
        return; // not confirmed: streamed again after a restart
      }
      log.warn(
          "CDC relay: {} rows not acknowledged; retrying from the first (attempt {})",
          remaining.size(),
          failures);
      sleeper.sleep(backoff.delay(failures, ThreadLocalRandom.current()));
    }
  }

  /**
   * Whether {@code next} (may be null) is the next event of the transaction {@code batch} ends in.
   */
  private static boolean endsMidTransaction(List<CdcEvent> batch, CdcEvent next) {
    CdcEvent last = batch.get(batch.size() - 1);
    return next != null && !last.fromTable() && next.commitLsn() == last.commitLsn();
  }

  /** Hands the settled prefix to the marker; returns its length. */
  private int settle(List<CdcEvent> events, List<PublishOutcome> outcomes) {
    List<OutboxRecord> acked = new ArrayList<>();
    List<PublishOutcome.Acknowledged> acks = new ArrayList<>();
    List<OutboxRecord> failed = new ArrayList<>();
    List<String> errors = new ArrayList<>();
    int o = 0;
    int n = 0;
    for (CdcEvent e : events) {
      OutboxRecord r = e.record();
      if (!r.readable()) {
        failed.add(r);
        errors.add("unreadable: " + r.unreadable());
      } else {
        PublishOutcome outcome = outcomes.get(o++);
        if (outcome instanceof PublishOutcome.Acknowledged a) {
          acked.add(r);
          acks.add(a);
        } else if (outcome instanceof PublishOutcome.Failed f && f.unpublishable()) {
          failed.add(r);
          errors.add(String.valueOf(f.error()));
        } else {
          break;
        }
      }
      n++;
    }
    if (!failed.isEmpty()) {
      unpublishable.addAndGet(failed.size());
      log.warn("CDC relay: {} rows cannot be published; marked failed and skipped", failed.size());
    }
    if (n > 0) {
      published.addAndGet(acked.size());
      marker.accept(new PublishedRowMarker.Settled(acked, acks, failed, errors, events.get(n - 1)));
    }
    return n;
  }
}
