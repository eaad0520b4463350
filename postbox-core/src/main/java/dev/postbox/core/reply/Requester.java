package dev.postbox.core.reply;

import dev.postbox.core.Message;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Sends requests and hands each caller the reply to its own request. The correlation id of a
 * request is its message id (a request whose correlation id is set must set it to its id); the
 * request carries this requester's reply address in the {@link RequestReplyHeaders#REPLY_TO}
 * header. Implementations: {@code KafkaRequester}, {@code RabbitRequester}.
 *
 * <ul>
 *   <li>A reply completes its request's future, once; a duplicate reply is counted and ignored.
 *   <li>A request without a reply within its timeout ends with a {@link RequestTimeoutException}
 *       naming it; a reply that comes later is counted and given to the late-reply listener, never
 *       to another caller.
 *   <li>A reply whose correlation id matches no request of this requester is counted and dropped.
 *   <li>At most {@code maxInFlight} requests wait at a time; one more is refused at once with a
 *       {@link RequesterBusyException} (back-pressure, not an unbounded map).
 * </ul>
 *
 * <p>Futures are completed on a thread of the requester, never the caller's: attach slow work with
 * the {@code *Async} methods. Thread-safe.
 */
public interface Requester extends AutoCloseable {

  /**
   * Sends {@code request} and returns its reply's future, completed with the {@link Reply}, or
   * exceptionally with {@link RequestTimeoutException}, {@link RequesterBusyException} or {@link
   * RequestFailedException}.
   *
   * @throws IllegalArgumentException if the request's correlation id is set and is not its id
   */
  CompletableFuture<Reply> request(Message request, Duration timeout);

  /**
   * {@link #request} and waits for the reply.
   *
   * @throws RequestTimeoutException if no reply came within {@code timeout}
   * @throws RequesterBusyException if too many requests are in flight
   * @throws RequestFailedException if it could not be sent
   * @throws InterruptedException if interrupted while waiting (the request stays in flight)
   */
  default Reply requestAndWait(Message request, Duration timeout) throws InterruptedException {
    try {
      return request(request, timeout).get();
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() instanceof CompletionException c ? c.getCause() : e.getCause();
      if (cause instanceof RuntimeException r) {
        throw r;
      }
      throw new RequestFailedException("request " + request.id() + " failed", cause);
    }
  }

  /** Counters since start. */
  RequesterStats stats();

  /**
   * Stops reading replies; requests still in flight end with a {@link RequestFailedException}.
   * Idempotent.
   */
  @Override
  void close();
}
