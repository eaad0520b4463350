package dev.postbox.jdbc.cdc;

import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A publisher that records what it acknowledges; after {@link #failAfter} acknowledgements it fails
 * every later message transiently (a broker that went away).
 */
final class RecordingPublisher implements RelayPublisher {

  private final List<Message> acknowledged = new ArrayList<>();
  private final AtomicInteger failAfter = new AtomicInteger(Integer.MAX_VALUE);

  void failAfter(int acknowledgements) {
    failAfter.set(acknowledgements);
  }

  synchronized List<Message> acknowledged() {
    return List.copyOf(acknowledged);
  }

  @Override
  public synchronized List<PublishOutcome> publish(List<Message> messages) {
    List<PublishOutcome> out = new ArrayList<>(messages.size());
    for (Message m : messages) {
      if (acknowledged.size() < failAfter.get()) {
        acknowledged.add(m);
        out.add(PublishOutcome.ACKNOWLEDGED);
      } else {
        out.add(new PublishOutcome.Failed(new IllegalStateException("broker away"), false));
      }
    }
    return out;
  }

  @Override
  public void close() {}
}
