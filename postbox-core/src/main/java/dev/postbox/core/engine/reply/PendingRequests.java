package dev.postbox.core.engine.reply;

import dev.postbox.core.Message;
import dev.postbox.core.reply.LateReplyListener;
import dev.postbox.core.reply.Reply;
import dev.postbox.core.reply.RequestFailedException;
import dev.postbox.core.reply.RequestTimeoutException;
import dev.postbox.core.reply.RequesterBusyException;
import dev.postbox.core.reply.RequesterStats;
import dev.postbox.core.time.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A requester's requests in flight and what became of the finished ones: matches each reply to its
 * request by correlation id, ends requests at their deadline (on an injected {@link Ticker}), keeps
 * at most {@code maxInFlight} requests, and tells late, duplicate and unknown replies apart.
 *
 * <ul>
 *   <li>A reply to a request in flight completes its future (once) and the request is remembered as
 *       answered: a further reply to it is a duplicate, counted and ignored.
 *   <li>{@link #expireDue()} ends every request whose deadline passed with a {@link
 *       RequestTimeoutException}; it is remembered as timed out, so its reply, when it comes, is
 *       late: counted and given to the late-reply listener (once; a further one is a duplicate).
 *   <li>A reply that matches no request in flight and none remembered is unknown: counted and
 *       dropped. Finished requests are remembered up to {@code rememberFinished} (the oldest are
 *       forgotten first), so memory stays bounded too.
 * </ul>
 *
 * <p>Futures are completed on {@code completions}, never while a lock is held, so a caller's
 * callbacks cannot stall the reply thread or the bookkeeping. Thread-safe.
 */
public final class PendingRequests {

  private static final Logger log = LoggerFactory.getLogger(PendingRequests.class);

  /** What a reply turned out to be. */
  public enum Match {
    /** The reply of a request in flight: its future is completed. */
    ANSWERED,
    /** The first reply of a request that timed out: given to the late-reply listener. */
    LATE,
    /** A further reply of a request already answered or late: ignored. */
    DUPLICATE,
    /** No request of this requester: dropped. */
    UNKNOWN
  }

  private enum Finished {
    ANSWERED,
    TIMED_OUT,
    LATE,
    FAILED
  }

  private record Pending(
      Message request, Duration timeout, long deadline, CompletableFuture<Reply> future) {}

  private final int maxInFlight;
  private final int rememberFinished;
  private final Ticker ticker;
  private final Executor completions;
  private final LateReplyListener lateReplies;

  private final Map<UUID, Pending> pending = new HashMap<>();
  private final PriorityQueue<Pending> byDeadline =
      new PriorityQueue<>((a, b) -> Long.compare(a.deadline - b.deadline, 0));
  private final LinkedHashMap<UUID, Finished> finished = new LinkedHashMap<>();

  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong replied = new AtomicLong();
  private final AtomicLong timedOut = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong late = new AtomicLong();
  private final AtomicLong duplicates = new AtomicLong();
  private final AtomicLong unknown = new AtomicLong();

  /**
   * At most {@code maxInFlight} requests at a time; {@code rememberFinished} finished requests are
   * remembered to tell late and duplicate replies from unknown ones; deadlines read {@code ticker};
   * futures are completed on {@code completions}; late replies go to {@code lateReplies}.
   */
  public PendingRequests(
      int maxInFlight,
      int rememberFinished,
      Ticker ticker,
      Executor completions,
      LateReplyListener lateReplies) {
    if (maxInFlight < 1) {
      throw new IllegalArgumentException("maxInFlight must be positive: " + maxInFlight);
    }
    if (rememberFinished < 0) {
      throw new IllegalArgumentException("rememberFinished must not be negative");
    }
    this.maxInFlight = maxInFlight;
    this.rememberFinished = rememberFinished;
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    this.completions = Objects.requireNonNull(completions, "completions");
    this.lateReplies = Objects.requireNonNull(lateReplies, "lateReplies");
  }

  /**
   * Registers {@code request} (its id is its correlation id) with its deadline {@code timeout} from
   * now, before it is sent. Returns its future; when {@code maxInFlight} requests are in flight, a
   * future already failed with {@link RequesterBusyException} (then nothing must be sent).
   *
   * @throws IllegalArgumentException if a request with the same id is in flight
   */
  public CompletableFuture<Reply> register(Message request, Duration timeout) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive: " + timeout);
    }
    CompletableFuture<Reply> future = new CompletableFuture<>();
    synchronized (this) {
      if (pending.containsKey(request.id())) {
        throw new IllegalArgumentException(
            "request " + request.id() + " is already in flight; wait for its reply");
      }
      if (pending.size() >= maxInFlight) {
        refused.incrementAndGet();
        return CompletableFuture.failedFuture(
            new RequesterBusyException(request.id(), maxInFlight));
      }
      finished.remove(request.id()); // asked again (a retry after a timeout): in flight again
      Pending p = new Pending(request, timeout, ticker.deadlineIn(timeout), future);
      pending.put(request.id(), p);
      byDeadline.add(p);
    }
    return future;
  }

  /** Counts a request the broker accepted. */
  public void sent() {
    sent.incrementAndGet();
  }

  /** Ends request {@code id} that could not be sent with a {@link RequestFailedException}. */
  public void sendFailed(UUID id, Throwable error) {
    Pending p;
    synchronized (this) {
      p = pending.remove(id);
      if (p == null) {
        return; // already timed out
      }
      remember(id, Finished.FAILED);
    }
    failed.incrementAndGet();
    fail(
        p,
        new RequestFailedException(
            "request "
                + id
                + " ("
                + p.request().type()
                + " to "
                + p.request().topic()
                + ")"
                + " could not be sent: "
                + error,
            error));
  }

  /** Matches {@code reply} to its request, completing its future, and says what it was. */
  public Match replyReceived(Reply reply) {
    UUID id = reply.requestId();
    Pending p;
    synchronized (this) {
      p = pending.remove(id);
      if (p == null) {
        Finished before = finished.get(id);
        if (before == Finished.TIMED_OUT) {
          finished.put(id, Finished.LATE);
        } else {
          Match m = before == null || before == Finished.FAILED ? Match.UNKNOWN : Match.DUPLICATE;
          (m == Match.UNKNOWN ? unknown : duplicates).incrementAndGet();
          return m;
        }
      } else {
        remember(id, Finished.ANSWERED);
      }
    }
    if (p == null) {
      late.incrementAndGet();
      try {
        lateReplies.lateReply(reply);
      } catch (Exception e) {
        log.warn("the late-reply listener threw on the reply to {}; ignored", id, e);
      }
      return Match.LATE;
    }
    replied.incrementAndGet();
    CompletableFuture<Reply> future = p.future();
    completions.execute(() -> future.complete(reply));
    return Match.ANSWERED;
  }

  /** Counts a reply that carries no usable correlation id (dropped). */
  public void unusableReply() {
    unknown.incrementAndGet();
  }

  /** Ends every request whose deadline has passed; returns how many. */
  public int expireDue() {
    List<Pending> expired = new ArrayList<>();
    synchronized (this) {
      while (!byDeadline.isEmpty() && ticker.reached(byDeadline.peek().deadline())) {
        Pending p = byDeadline.poll();
        if (pending.remove(p.request().id(), p)) {
          remember(p.request().id(), Finished.TIMED_OUT);
          expired.add(p);
        }
      }
      // drop answered heads so the queue does not keep them until their deadline
      while (!byDeadline.isEmpty()
          && pending.get(byDeadline.peek().request().id()) != byDeadline.peek()) {
        byDeadline.poll();
      }
    }
    for (Pending p : expired) {
      timedOut.incrementAndGet();
      Message r = p.request();
      fail(p, new RequestTimeoutException(r.id(), r.type(), r.topic(), p.timeout()));
    }
    return expired.size();
  }

  /** Ends every request in flight with a {@link RequestFailedException} naming {@code why}. */
  public void failAll(String why) {
    List<Pending> all;
    synchronized (this) {
      all = new ArrayList<>(pending.values());
      pending.clear();
      byDeadline.clear();
      all.forEach(p -> remember(p.request().id(), Finished.FAILED));
    }
    for (Pending p : all) {
      failed.incrementAndGet();
      fail(p, new RequestFailedException("request " + p.request().id() + " ended: " + why, null));
    }
  }

  /** Requests in flight now. */
  public synchronized int inFlight() {
    return pending.size();
  }

  /** The counters. */
  public RequesterStats stats() {
    return new RequesterStats(
        sent.get(),
        replied.get(),
        timedOut.get(),
        failed.get(),
        refused.get(),
        late.get(),
        duplicates.get(),
        unknown.get(),
        inFlight());
  }

  private void fail(Pending p, RuntimeException error) {
    CompletableFuture<Reply> future = p.future();
    completions.execute(() -> future.completeExceptionally(error));
  }

  /** Under the lock. */
  private void remember(UUID id, Finished how) {
    if (rememberFinished == 0) {
      return;
    }
    finished.remove(id);
    finished.put(id, how);
    while (finished.size() > rememberFinished) {
      finished.remove(finished.keySet().iterator().next());
    }
  }
}
