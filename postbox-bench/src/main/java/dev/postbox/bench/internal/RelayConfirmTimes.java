package dev.postbox.bench.internal;

import dev.postbox.core.Message;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.RelayPublisher;
import java.util.Collection;
import java.util.List;

/**
 * A relay publisher that reports, for each message its delegate acknowledged, when the relay had
 * the broker's confirm of it, to an {@link E2eTimes}: the RabbitMQ pipelines' broker
 * acknowledgement. It is the instant the relay's wait for its batch's outcomes ({@link
 * PendingPublish#outcomes()}) returned, the relay's own reading of the publisher confirms: at or
 * after the confirm of the batch's last message, for every message of the batch (the RabbitMQ relay
 * publisher shows no confirm of a single message: its confirm listener is its own), and later when
 * the relay was still claiming or marking the batch before when the confirms came. Every call is
 * passed on as it is, {@link #sendAfter} with its delegate's own pending publish, so the relay
 * pipelines as without it.
 */
final class RelayConfirmTimes implements RelayPublisher {

  private final RelayPublisher delegate;
  private final E2eTimes times;

  RelayConfirmTimes(RelayPublisher delegate, E2eTimes times) {
    this.delegate = delegate;
    this.times = times;
  }

  @Override
  public List<PublishOutcome> publish(List<Message> messages) throws InterruptedException {
    return record(messages, delegate.publish(messages));
  }

  @Override
  public PendingPublish send(List<Message> messages) throws InterruptedException {
    return new Timed(delegate.send(messages), messages);
  }

  @Override
  public PendingPublish send(List<Message> messages, List<LaneLease> leases)
      throws InterruptedException {
    return new Timed(delegate.send(messages, leases), messages);
  }

  @Override
  public PendingPublish sendAfter(PendingPublish previous, List<Message> messages)
      throws InterruptedException {
    return new Timed(delegate.sendAfter(unwrap(previous), messages), messages);
  }

  @Override
  public PendingPublish sendAfter(
      PendingPublish previous, List<Message> messages, List<LaneLease> leases)
      throws InterruptedException {
    return new Timed(delegate.sendAfter(unwrap(previous), messages, leases), messages);
  }

  @Override
  public boolean pipelinesInOrder() {
    return delegate.pipelinesInOrder();
  }

  @Override
  public void lanesOwned(Collection<LaneLease> leases) throws InterruptedException {
    delegate.lanesOwned(leases);
  }

  @Override
  public void checkAccess() {
    delegate.checkAccess();
  }

  @Override
  public void close() {
    delegate.close();
  }

  private static PendingPublish unwrap(PendingPublish p) {
    return p instanceof Timed t ? t.inner : p;
  }

  /** Reports the acknowledged ones of {@code messages} (aligned with {@code outcomes}) now. */
  private List<PublishOutcome> record(List<Message> messages, List<PublishOutcome> outcomes) {
    long now = E2eTimes.nowMicros();
    for (int i = 0; i < outcomes.size() && i < messages.size(); i++) {
      if (outcomes.get(i) instanceof PublishOutcome.Acknowledged) {
        times.acked(messages.get(i).id(), now); // the first reading counts
      }
    }
    return outcomes;
  }

  /** A batch in flight: its outcomes, reported when the relay has them. */
  private final class Timed implements PendingPublish {
    private final PendingPublish inner;
    private final List<Message> messages;

    Timed(PendingPublish inner, List<Message> messages) {
      this.inner = inner;
      this.messages = messages;
    }

    @Override
    public List<PublishOutcome> outcomes() throws InterruptedException {
      return record(messages, inner.outcomes());
    }

    @Override
    public List<PublishOutcome> outcomesWhenIdle() throws InterruptedException {
      return record(messages, inner.outcomesWhenIdle());
    }
  }
}
