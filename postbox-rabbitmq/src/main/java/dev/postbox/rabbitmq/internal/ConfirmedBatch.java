package dev.postbox.rabbitmq.internal;

import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.rabbitmq.RabbitUnroutableException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The outcomes of one batch published on one confirm-mode channel: which publish sequence number is
 * which message, the broker's acks and nacks (single or {@code multiple}), the mandatory messages
 * it returned (a return precedes the ack of the same message), and the channel's loss. Each message
 * is resolved once; {@link #await} waits until all are. Thread-safe: the relay thread sends, the
 * connection's thread confirms.
 */
public final class ConfirmedBatch {

  private final Object channel;
  private final PublishOutcome[] outcomes;
  private final CountDownLatch done;
  private final CountDownLatch[] each;
  private final NavigableMap<Long, Integer> outstanding = new ConcurrentSkipListMap<>();
  private final Map<Integer, String> ids = new ConcurrentHashMap<>();
  private final Map<String, String> returned = new ConcurrentHashMap<>();
  private volatile boolean failed;

  /** A batch of {@code size} messages published on {@code channel}. */
  public ConfirmedBatch(Object channel, int size) {
    this.channel = channel;
    this.outcomes = new PublishOutcome[size];
    this.done = new CountDownLatch(size);
    this.each = new CountDownLatch[size];
    for (int i = 0; i < size; i++) {
      each[i] = new CountDownLatch(1);
    }
  }

  /** Whether this batch was published on {@code channel} (callbacks of older channels are not). */
  public boolean on(Object channel) {
    return this.channel == channel;
  }

  /** Message {@code index} (id {@code messageId}) was published as {@code seq}. */
  public void published(long seq, int index, String messageId) {
    ids.put(index, messageId);
    outstanding.put(seq, index);
  }

  /** Message {@code index} failed without being published (or its publish call threw). */
  public void notSent(int index, PublishOutcome.Failed failure) {
    resolve(index, failure);
  }

  /** The broker returned the mandatory message {@code messageId} as unroutable. */
  public void returned(String messageId, int replyCode, String replyText, String exchange) {
    if (messageId != null && ids.containsValue(messageId)) {
      failed = true; // known now, before the ack that resolves it
      returned.put(
          messageId,
          "returned by the broker ("
              + replyCode
              + " "
              + replyText
              + "): no queue is bound to exchange '"
              + exchange
              + "'");
    }
  }

  /** The broker confirmed {@code seq} (and, if {@code multiple}, everything before it). */
  public void acked(long seq, boolean multiple) {
    for (int index : take(seq, multiple)) {
      String reason = returned.get(ids.get(index));
      resolve(
          index,
          reason == null
              ? PublishOutcome.ACKNOWLEDGED
              : new PublishOutcome.Failed(new RabbitUnroutableException(reason), false, true));
    }
  }

  /** The broker refused {@code seq} (and, if {@code multiple}, everything before it). */
  public void nacked(long seq, boolean multiple) {
    for (int index : take(seq, multiple)) {
      resolve(
          index,
          new PublishOutcome.Failed(
              new IllegalStateException("nacked by the broker (basic.nack)"), false));
    }
  }

  /** The channel is gone: whatever is unconfirmed failed (it may or may not be in a queue). */
  public void lost(Throwable cause) {
    for (int index : take(Long.MAX_VALUE, true)) {
      resolve(index, new PublishOutcome.Failed(cause, false));
    }
  }

  /**
   * Whether a message of this batch is known to have failed so far (not sent, nacked, returned,
   * lost): a batch pipelined behind it on the same channel then sends nothing more.
   */
  public boolean failedSoFar() {
    return failed;
  }

  /** Waits up to {@code timeout} for every outcome; whether all came. */
  public boolean await(Duration timeout) throws InterruptedException {
    return done.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /**
   * Waits up to {@code timeout} for the outcome of message {@code index}; null if it did not come
   * in time.
   */
  public PublishOutcome outcomeOf(int index, Duration timeout) throws InterruptedException {
    if (!each[index].await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
      return null;
    }
    synchronized (outcomes) {
      return outcomes[index];
    }
  }

  /** The outcomes in send order; one that never came counts as a transient failure. */
  public List<PublishOutcome> outcomes() {
    PublishOutcome[] out = new PublishOutcome[outcomes.length];
    synchronized (outcomes) {
      for (int i = 0; i < out.length; i++) {
        out[i] =
            outcomes[i] != null
                ? outcomes[i]
                : new PublishOutcome.Failed(
                    new IllegalStateException("no confirm within the timeout"), false);
      }
    }
    return Arrays.asList(out);
  }

  private List<Integer> take(long seq, boolean multiple) {
    if (!multiple) {
      Integer index = outstanding.remove(seq);
      return index == null ? List.of() : List.of(index);
    }
    NavigableMap<Long, Integer> head = outstanding.headMap(seq, true);
    List<Integer> indices = List.copyOf(head.values());
    head.clear();
    return indices;
  }

  private void resolve(int index, PublishOutcome outcome) {
    synchronized (outcomes) {
      if (outcomes[index] != null) {
        return;
      }
      outcomes[index] = outcome;
    }
    each[index].countDown();
    if (outcome instanceof PublishOutcome.Failed) {
      failed = true;
    }
    done.countDown();
  }
}
