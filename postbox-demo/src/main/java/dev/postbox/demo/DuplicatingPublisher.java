package dev.postbox.demo;

import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link RelayPublisher} that publishes the messages of some types twice, on purpose, so that the
 * demo's consumers see duplicates in every run, not only after a crash. It publishes the batch,
 * then publishes again, in the same order, those messages of the chosen types whose first copy was
 * acknowledged. A message counts as acknowledged only if both of its copies were; a failed second
 * copy is reported as a transient failure, so the relay publishes the message again later (yet more
 * copies, never a loss).
 *
 * <p>Order: second copies are only sent for messages already on the topic, so they are never the
 * first occurrence of a message, and the first occurrences keep the relay's per-key order.
 *
 * <p>Used by one relay thread at a time, like the publisher it wraps.
 */
final class DuplicatingPublisher implements RelayPublisher {

  private final RelayPublisher delegate;
  private final Set<String> types;
  private final AtomicLong secondCopies = new AtomicLong();

  DuplicatingPublisher(RelayPublisher delegate, Set<String> types) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.types = Set.copyOf(types);
  }

  @Override
  public List<PublishOutcome> publish(List<Message> messages) throws InterruptedException {
    List<PublishOutcome> first = delegate.publish(messages);
    List<Integer> again = new ArrayList<>();
    for (int i = 0; i < messages.size(); i++) {
      if (first.get(i) instanceof PublishOutcome.Acknowledged
          && types.contains(messages.get(i).type())) {
        again.add(i);
      }
    }
    if (again.isEmpty()) {
      return first;
    }
    List<PublishOutcome> second = delegate.publish(again.stream().map(messages::get).toList());
    List<PublishOutcome> outcomes = new ArrayList<>(first);
    for (int j = 0; j < again.size(); j++) {
      if (second.get(j) instanceof PublishOutcome.Failed f) {
        outcomes.set(again.get(j), new PublishOutcome.Failed(f.error(), false));
      } else {
        secondCopies.incrementAndGet();
      }
    }
    return outcomes;
  }

  /** Second copies acknowledged so far. */
  long secondCopies() {
    return secondCopies.get();
  }

  @Override
  public void close() {
    delegate.close();
  }
}
