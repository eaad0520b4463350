package dev.postbox.jdbc.cdc;

import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A publisher that acknowledges everything and counts its calls; while {@linkplain #close(boolean)
 * closed} a call waits at the gate (the publishing thread of a paused process, its batch already
 * handed over).
 */
final class GatedPublisher implements RelayPublisher {

  private final List<Message> acknowledged = new ArrayList<>();
  private final AtomicInteger calls = new AtomicInteger();
  private final Object gate = new Object();
  private boolean closed;
  private int waiting;

  void close(boolean closed) {
    synchronized (gate) {
      this.closed = closed;
      gate.notifyAll();
    }
  }

  int calls() {
    return calls.get();
  }

  boolean waiting() {
    synchronized (gate) {
      return waiting > 0;
    }
  }

  synchronized List<Message> acknowledged() {
    return List.copyOf(acknowledged);
  }

  @Override
  public List<PublishOutcome> publish(List<Message> messages) throws InterruptedException {
    calls.incrementAndGet();
    synchronized (gate) {
      waiting++;
      try {
        while (closed) {
          gate.wait();
        }
      } finally {
        waiting--;
      }
    }
    synchronized (this) {
      acknowledged.addAll(messages);
    }
    return messages.stream().map(m -> (PublishOutcome) PublishOutcome.ACKNOWLEDGED).toList();
  }

  @Override
  public void close() {}
}
