package dev.postbox.kafka.internal;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps workers from starting a record while this process may have been out of the consumer group
 * without knowing it yet.
 *
 * <p>A process that is stopped (SIGSTOP, a long GC pause, a frozen VM) for longer than its session
 * timeout is removed from the group and its partitions go to another member. When it resumes, its
 * worker threads run before its poll thread has heard from the coordinator: records it fetched
 * before the pause would be applied after the successor took over (a zombie apply). Kafka's
 * consumer has no API that tells a worker "the group still holds this partition", and its own
 * liveness checks run on the poll and heartbeat threads, so this is our own: the poll thread
 * reports every return from {@code poll()}; a gap between two returns longer than the threshold
 * (chosen below the session timeout) means the process may have been evicted, and workers wait
 * until the poll thread proved the membership with a broker-checked offset commit (which fails for
 * a member of an old generation) or the partition was revoked or lost.
 *
 * <p>The same holds for a process that keeps polling but cannot reach its group coordinator (a
 * network partition from the broker while the database is still reachable): its polls return empty,
 * yet the coordinator hears no heartbeat and hands its partitions on after the session timeout,
 * while its workers would go on with the records fetched before the cut. So the poll thread also
 * reports how long ago the consumer last sent a heartbeat ({@link #heartbeatAge}); an age above the
 * threshold makes the membership suspect just like a gap between polls.
 *
 * <p>Heartbeats are not proof enough either. A broker cut off from the other brokers while its
 * clients still reach it (a network partition among the brokers) goes on answering its members'
 * heartbeats as their group coordinator, while the other brokers elect a new leader for the group's
 * offsets partition, and so a new coordinator, which hands the partitions of members it does not
 * hear from to the members it does: two members apply one partition at once (a verify campaign
 * found 19 such applies on 2026-12-06, seed 20261341). What the cut-off coordinator cannot do is
 * acknowledge an offset commit: the commit is written to the offsets partition with every in-sync
 * replica, and the followers no longer fetch. So a successful commit is the proof (see {@link
 * #committed()}): the membership is also suspect once no commit succeeded for longer than the
 * threshold, and the poll thread commits the positions again when the last success is half the
 * threshold old ({@link #proofDue()}), so that an idle member keeps proving it too. The new
 * coordinator hands the partitions on only after its broker was fenced and the member's session
 * timed out there, which is longer than the threshold.
 *
 * <p>Workers ask twice: before a record starts, and again inside its transaction right before the
 * commit ({@code Ownership.mayCommit}), so a record that passed the first check just before a pause
 * does not commit after the successor took its partition (a verify campaign found two such applies
 * on 2026-12-04, seed 20261209: a pause landed between the first check and the transaction). What
 * it does not cover: the commit itself, and a transaction that sat open through the pause (bound
 * that with the database's {@code idle_in_transaction_session_timeout}, below the session timeout:
 * the database ends it, and its commit fails).
 *
 * <p>Thread-safe: {@link #polled()} and {@link #verified()} are called by the poll thread, {@link
 * #awaitFresh} by workers.
 */
public final class MembershipFence {

  private static final Logger log = LoggerFactory.getLogger(MembershipFence.class);
  private static final long SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private final long thresholdNanos;
  private final LongSupplier nanoTime;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  // written by the poll thread; a worker reads lastPoll before suspect (see fresh())
  private volatile long lastPoll;
  private volatile boolean suspect;
  // the monotonic time of the last successful offset commit (or verification, or the start)
  private volatile long lastProof;
  private final String name;
  // whether a wait of a worker was logged and not yet the fence's opening (for the INFO lines)
  private final AtomicBoolean waitLogged = new AtomicBoolean();
  // whether the current silence of the heartbeats was logged (poll thread only)
  private boolean silenceLogged;

  /**
   * A fence that suspects the membership after a gap of more than {@code threshold} between two
   * polls; {@code nanoTime} is the monotonic clock ({@code System::nanoTime} outside tests).
   */
  public MembershipFence(Duration threshold, LongSupplier nanoTime) {
    this("consumer", threshold, nanoTime);
  }

  /** As {@link #MembershipFence(Duration, LongSupplier)}, logging as {@code name}. */
  public MembershipFence(String name, Duration threshold, LongSupplier nanoTime) {
    this.name = name;
    if (threshold.isNegative() || threshold.isZero()) {
      throw new IllegalArgumentException("threshold must be positive, was " + threshold);
    }
    this.thresholdNanos = threshold.toNanos();
    this.nanoTime = nanoTime;
    this.lastPoll = nanoTime.getAsLong();
    this.lastProof = lastPoll;
  }

  /**
   * The threshold for a consumer with these settings: half of what is left of the session timeout
   * after one heartbeat interval (the coordinator may have last heard from the member one interval
   * before it stopped), and at least 100 ms. With Kafka's defaults (45 s, 3 s): 21 s.
   */
  public static Duration thresholdFor(Map<String, Object> consumerConfig) {
    long session = millis(consumerConfig.get("session.timeout.ms"), 45_000);
    long heartbeat = millis(consumerConfig.get("heartbeat.interval.ms"), 3_000);
    return Duration.ofMillis(Math.max(100, (session - heartbeat) / 2));
  }

  private static long millis(Object value, long otherwise) {
    if (value == null) {
      return otherwise;
    }
    return value instanceof Number n ? n.longValue() : Long.parseLong(value.toString().trim());
  }

  /**
   * Poll thread: {@code poll()} returned. Returns whether the membership must be verified (the gap
   * since the previous return was too long, now or before, and no verification succeeded since).
   */
  public boolean polled() {
    long now = nanoTime.getAsLong();
    long unproved = now - lastProof;
    if (unproved > thresholdNanos) {
      if (!suspect) {
        log.info(
            "{}: no offset commit confirmed by the group coordinator for {} ms (threshold {} ms):"
                + " records wait until the group membership is verified",
            name,
            TimeUnit.NANOSECONDS.toMillis(unproved),
            TimeUnit.NANOSECONDS.toMillis(thresholdNanos));
      }
      suspect = true;
    }
    long gap = now - lastPoll;
    if (gap > thresholdNanos) {
      if (!suspect) {
        log.info(
            "{}: {} ms between two polls (threshold {} ms): records wait until the group"
                + " membership is verified",
            name,
            TimeUnit.NANOSECONDS.toMillis(gap),
            TimeUnit.NANOSECONDS.toMillis(thresholdNanos));
      }
      suspect = true; // before lastPoll moves, so a worker that sees the new lastPoll sees this
    }
    lastPoll = now;
    opened();
    signal();
    return suspect;
  }

  /**
   * Poll thread: the poll loop starts now. The gap before the first poll is measured from here, not
   * from construction: a slow start-up is not a pause of a member.
   */
  public void started() {
    lastPoll = nanoTime.getAsLong();
    lastProof = lastPoll;
  }

  /**
   * Poll thread: an offset commit succeeded (the coordinator accepted this member's generation and
   * the offsets partition's in-sync replicas have the commit): the membership is proved until the
   * threshold passes again. Does not clear a suspicion: that takes {@link #verified()}.
   */
  public void committed() {
    lastProof = nanoTime.getAsLong();
  }

  /**
   * Whether the membership should be proved again now (the last successful commit is more than half
   * the threshold old): the poll thread then commits the positions again.
   */
  public boolean proofDue() {
    return nanoTime.getAsLong() - lastProof > thresholdNanos / 2;
  }

  /**
   * Poll thread: the consumer last sent a heartbeat to its group coordinator {@code age} ago (its
   * {@code last-heartbeat-seconds-ago} metric; call before {@link #polled()}). Longer than the
   * threshold: the coordinator may have evicted this member, so the membership must be verified.
   */
  public void heartbeatAge(Duration age) {
    if (age.toNanos() <= thresholdNanos) {
      silenceLogged = false;
      return;
    }
    if (!suspect && !silenceLogged) {
      silenceLogged = true;
      log.info(
          "{}: no heartbeat sent to the group coordinator for {} ms (threshold {} ms): records"
              + " wait until the group membership is verified",
          name,
          age.toMillis(),
          TimeUnit.NANOSECONDS.toMillis(thresholdNanos));
    }
    suspect = true;
  }

  /** Poll thread: a broker-checked commit after the last {@link #polled()} succeeded. */
  public void verified() {
    lastProof = nanoTime.getAsLong();
    suspect = false;
    opened();
    signal();
  }

  /** Whether workers would wait now (the membership is not {@link #fresh()}). */
  public boolean fenced() {
    return !fresh();
  }

  /** The monotonic time of the last return from {@code poll()} (or of the start). */
  public long lastPollNanos() {
    return lastPoll;
  }

  private void opened() {
    if (fresh() && waitLogged.compareAndSet(true, false)) {
      log.info("{}: membership fence open again; waiting records go on", name);
    }
  }

  /** Whether the last poll and the last successful commit are recent and no gap is unverified. */
  public boolean fresh() {
    long last = lastPoll;
    long proof = lastProof;
    boolean s = suspect;
    long now = nanoTime.getAsLong();
    return !s && now - last <= thresholdNanos && now - proof <= thresholdNanos;
  }

  /**
   * Worker: waits until the membership is {@link #fresh()} (returns {@code true}) or {@code gone}
   * is true (returns {@code false}: the record must not start).
   */
  public boolean awaitFresh(BooleanSupplier gone) {
    while (true) {
      if (gone.getAsBoolean()) {
        return false;
      }
      if (fresh()) {
        return true;
      }
      if (waitLogged.compareAndSet(false, true)) {
        log.info(
            "{}: records wait on the membership fence (last poll {} ms ago{})",
            name,
            TimeUnit.NANOSECONDS.toMillis(nanoTime.getAsLong() - lastPoll),
            suspect ? ", a gap between polls not yet verified" : "");
      }
      lock.lock();
      try {
        if (!fresh()) {
          changed.awaitNanos(SLICE_NANOS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      } finally {
        lock.unlock();
      }
    }
  }

  private void signal() {
    lock.lock();
    try {
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }
}
