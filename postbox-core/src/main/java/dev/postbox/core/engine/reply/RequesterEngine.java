package dev.postbox.core.engine.reply;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.Message;
import dev.postbox.core.reply.LateReplyListener;
import dev.postbox.core.reply.Reply;
import dev.postbox.core.reply.RequestReplyHeaders;
import dev.postbox.core.reply.Requester;
import dev.postbox.core.reply.RequesterStats;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.core.tracing.TraceHeaders;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link Requester} on any transport: stamps each request with its correlation id (its message
 * id) and the transport's reply address, registers it in {@link PendingRequests} before sending,
 * matches the replies the transport reads ({@link #replyReceived}), and ends overdue requests from
 * a timeout thread that wakes every {@code checkInterval} (on the injected {@link Sleeper}; the
 * deadlines read the injected {@link Ticker}). The transport adapter owns the broker clients and
 * closes them after {@link #close()}. Thread-safe.
 */
public final class RequesterEngine implements Requester {

  private static final Logger log = LoggerFactory.getLogger(RequesterEngine.class);

  /** Futures are completed on virtual threads, off the reply and timeout threads. */
  public static final Executor VIRTUAL_THREADS = r -> Thread.ofVirtual().start(r);

  private final String name;
  private final RequestTransport transport;
  private final PendingRequests pending;
  private final Sleeper sleeper;
  private final Duration checkInterval;
  private volatile boolean running;
  private Thread timeouts;

  /**
   * A requester named {@code name} (for logs and thread names) sending through {@code transport}.
   */
  public RequesterEngine(
      String name,
      RequestTransport transport,
      int maxInFlight,
      int rememberFinished,
      Duration checkInterval,
      LateReplyListener lateReplies,
      Ticker ticker,
      Sleeper sleeper,
      Executor completions) {
    this.name = Objects.requireNonNull(name, "name");
    this.transport = Objects.requireNonNull(transport, "transport");
    this.pending =
        new PendingRequests(maxInFlight, rememberFinished, ticker, completions, lateReplies);
    this.sleeper = Objects.requireNonNull(sleeper, "sleeper");
    this.checkInterval = Objects.requireNonNull(checkInterval, "checkInterval");
    if (checkInterval.isNegative() || checkInterval.isZero()) {
      throw new IllegalArgumentException("checkInterval must be positive: " + checkInterval);
    }
  }

  /** Starts the timeout thread. */
  public synchronized void start() {
    if (timeouts != null) {
      throw new IllegalStateException("already started");
    }
    running = true;
    timeouts = Thread.ofVirtual().name("postbox-request-timeouts-" + name).start(this::sweep);
  }

  private void sweep() {
    while (running) {
      try {
        sleeper.sleep(checkInterval);
      } catch (InterruptedException e) {
        return;
      }
      try {
        pending.expireDue();
      } catch (RuntimeException e) {
        log.error("{}: ending overdue requests failed; trying again", name, e);
      }
    }
  }

  /** The request as sent: correlation id = its id, the reply address, the current trace context. */
  Message stamped(Message request) {
    return stamp(request, transport.replyAddress());
  }

  /**
   * {@code request} with correlation id = its id, header {@code reply-to} = {@code replyAddress}
   * and the current trace context (also a durable request's form).
   *
   * @throws IllegalArgumentException if its correlation id is set and is not its id
   */
  public static Message stamp(Message request, String replyAddress) {
    String id = request.id().toString();
    if (request.correlationId().isPresent() && !request.correlationId().get().equals(id)) {
      throw new IllegalArgumentException(
          "request "
              + id
              + " has correlation id '"
              + request.correlationId().get()
              + "'; a request's correlation id is its message id (leave it unset)");
    }
    Map<String, String> headers = new LinkedHashMap<>(request.headers());
    headers.put(RequestReplyHeaders.REPLY_TO, replyAddress);
    return new Message(
        request.id(),
        request.topic(),
        request.type(),
        request.schemaVersion(),
        request.key(),
        request.occurredAt(),
        request.source(),
        Optional.of(id),
        request.causationId(),
        request.tenant(),
        TraceHeaders.withCurrent(headers),
        request.payload());
  }

  @Override
  public CompletableFuture<Reply> request(Message request, Duration timeout) {
    if (!running) {
      throw new IllegalStateException("requester " + name + " is not running");
    }
    Message stamped = stamped(request);
    CompletableFuture<Reply> future = pending.register(stamped, timeout);
    if (future.isDone()) {
      return future; // refused: nothing is sent
    }
    CompletableFuture<Void> send;
    try {
      send = transport.send(stamped);
    } catch (RuntimeException e) {
      pending.sendFailed(stamped.id(), e);
      return future;
    }
    send.whenComplete((ok, error) -> {
      if (error != null) {
        pending.sendFailed(stamped.id(), error);
      } else {
        pending.sent();
        CrashPoints.hit(CrashPoints.REQUESTER_AFTER_SEND);
      }
    });
    return future;
  }

  /**
   * A message read at this requester's reply address: matched by its correlation id (a reply
   * without one, or with one that is not a UUID, is counted as unknown and dropped).
   */
  public PendingRequests.Match replyReceived(Message reply) {
    Optional<UUID> id = reply.correlationId().flatMap(RequesterEngine::uuid);
    if (id.isEmpty()) {
      pending.unusableReply();
      log.debug("{}: dropped reply {} without a usable correlation id", name, reply.id());
      return PendingRequests.Match.UNKNOWN;
    }
    PendingRequests.Match m = pending.replyReceived(new Reply(id.get(), reply));
    if (m == PendingRequests.Match.UNKNOWN) {
      log.debug("{}: dropped reply to unknown request {}", name, id.get());
    }
    return m;
  }

  private static Optional<UUID> uuid(String text) {
    try {
      return Optional.of(UUID.fromString(text));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  /** The bookkeeping, for tests driving time by hand. */
  public PendingRequests pending() {
    return pending;
  }

  @Override
  public RequesterStats stats() {
    return pending.stats();
  }

  /** Stops the timeout thread and fails the requests in flight. Idempotent. */
  @Override
  public void close() {
    Thread t;
    synchronized (this) {
      if (!running) {
        return;
      }
      running = false;
      t = timeouts;
    }
    if (t != null) {
      t.interrupt();
    }
    pending.failAll("requester " + name + " closed before its reply came");
  }
}
