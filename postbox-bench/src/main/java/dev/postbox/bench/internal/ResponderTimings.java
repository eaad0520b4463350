package dev.postbox.bench.internal;

import dev.postbox.core.Payload;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.MessageHandler;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Where a responder's time goes, for {@link RrBench}'s profile: wraps the responder's handler and
 * sums, per request, the time in the handler (inside the inbox transaction, after the inbox row's
 * insert), from its return to {@code completed} (the commit) and in {@code completed} (the reply
 * sent and acknowledged by the broker), with the most requests in those steps at once. Thread-safe.
 */
final class ResponderTimings implements MessageHandler {

  private final MessageHandler inner;
  private final ConcurrentHashMap<Object, Long> handled = new ConcurrentHashMap<>();
  private final LongAdder requests = new LongAdder();
  private final LongAdder inHandler = new LongAdder();
  private final LongAdder commit = new LongAdder();
  private final LongAdder reply = new LongAdder();
  private final AtomicInteger busy = new AtomicInteger();
  private final AtomicInteger maxBusy = new AtomicInteger();
  private final AtomicLong since = new AtomicLong(System.nanoTime());

  ResponderTimings(MessageHandler inner) {
    this.inner = inner;
  }

  @Override
  public void handle(Delivery delivery) throws Exception {
    long t0 = System.nanoTime();
    maxBusy.accumulateAndGet(busy.incrementAndGet(), Math::max);
    try {
      inner.handle(delivery);
    } finally {
      long t1 = System.nanoTime();
      inHandler.add(t1 - t0);
      handled.put(delivery.message().id(), t1);
    }
  }

  @Override
  public void completed(Delivery delivery, Optional<Payload> result, boolean duplicate)
      throws Exception {
    long t2 = System.nanoTime();
    Long t1 = handled.remove(delivery.message().id());
    if (t1 != null) {
      commit.add(t2 - t1);
    }
    try {
      inner.completed(delivery, result, duplicate);
    } finally {
      reply.add(System.nanoTime() - t2);
      requests.increment();
      busy.decrementAndGet();
    }
  }

  /** The averages since the last call, as text; starts a new interval. */
  String takeSummary() {
    long n = Math.max(1, requests.sumThenReset());
    double secs = (System.nanoTime() - since.getAndSet(System.nanoTime())) / 1e9;
    String s =
        String.format(
            Locale.ROOT,
            "responder: %d requests in %.1f s; per request %.2f ms in the handler (in the"
                + " transaction), %.2f ms to the commit's end, %.2f ms sending the reply (to the"
                + " broker's ack); at most %d at once",
            n,
            secs,
            inHandler.sumThenReset() / 1e6 / n,
            commit.sumThenReset() / 1e6 / n,
            reply.sumThenReset() / 1e6 / n,
            maxBusy.getAndSet(0));
    return s;
  }
}
