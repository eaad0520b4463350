package dev.postbox.rabbitmq.internal;

import dev.postbox.rabbitmq.RabbitUnroutableException;
import java.io.IOException;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The publishes of one confirm-mode channel that wait for the broker's confirm, each with its own
 * future, so that many publishers share the channel and wait at once (pipelined confirms) instead
 * of one after another. An ack completes a future with nothing, or, for a mandatory message the
 * broker returned first (a return precedes the ack of the same message), with the return's reason;
 * a nack fails it with a {@link RabbitUnroutableException}; the channel's loss fails every
 * outstanding one with an {@link IOException}. Acks and nacks may be {@code multiple}.
 *
 * <p>The caller registers a publish with {@link #publishing} under the lock it publishes with (the
 * sequence number must be the one the publish gets). Thread-safe: publishers register, the
 * connection's thread confirms.
 */
public final class PendingConfirms {

  private final NavigableMap<Long, CompletableFuture<Optional<String>>> outstanding =
      new ConcurrentSkipListMap<>();
  private final Map<Long, String> ids = new ConcurrentHashMap<>();
  private final Map<String, String> returned = new ConcurrentHashMap<>();

  /**
   * Registers the publish about to get {@code seq} (the channel's next publish sequence number) of
   * the message {@code messageId}; the future completes at its confirm (with the reason if the
   * message was returned).
   */
  public CompletableFuture<Optional<String>> publishing(long seq, String messageId) {
    CompletableFuture<Optional<String>> f = new CompletableFuture<>();
    if (messageId != null) {
      ids.put(seq, messageId);
    }
    outstanding.put(seq, f);
    return f;
  }

  /** The publish of {@code seq} did not happen (its call threw): forgets it. */
  public void notPublished(long seq) {
    ids.remove(seq);
    outstanding.remove(seq);
  }

  /** The broker returned the mandatory message {@code messageId} for {@code reason}. */
  public void returned(String messageId, String reason) {
    if (messageId != null) {
      returned.put(messageId, reason);
    }
  }

  /** The broker acknowledged {@code seq} (and everything before it with {@code multiple}). */
  public void acked(long seq, boolean multiple) {
    settle(seq, multiple, null);
  }

  /** The broker refused {@code seq} (and everything before it with {@code multiple}). */
  public void nacked(long seq, boolean multiple) {
    settle(seq, multiple, "the broker refused it (nack)");
  }

  /** The channel is gone: every outstanding publish fails with {@code reason}. */
  public void channelLost(String reason) {
    for (Long seq : outstanding.keySet()) {
      CompletableFuture<Optional<String>> f = outstanding.remove(seq);
      ids.remove(seq);
      if (f != null) {
        f.completeExceptionally(
            new IOException("the channel closed before the broker confirmed: " + reason));
      }
    }
  }

  /** Publishes waiting for their confirm now. */
  public int size() {
    return outstanding.size();
  }

  private void settle(long seq, boolean multiple, String nack) {
    NavigableMap<Long, CompletableFuture<Optional<String>>> done =
        multiple ? outstanding.headMap(seq, true) : outstanding.subMap(seq, true, seq, true);
    for (Long s : done.keySet()) {
      CompletableFuture<Optional<String>> f = outstanding.remove(s);
      String id = ids.remove(s);
      String why = id == null ? null : returned.remove(id);
      if (f == null) {
        continue;
      }
      if (nack != null) {
        f.completeExceptionally(new RabbitUnroutableException(nack));
      } else {
        f.complete(Optional.ofNullable(why));
      }
    }
  }
}
