package dev.postbox.bench.internal;

import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher;
import java.util.List;

/**
 * A relay publisher that hides its delegate's {@link RelayPublisher#pipelinesInOrder()}, so the
 * relay sends batch n+1 only once n's outcomes are in (one batch unconfirmed at a time, the relay
 * before ordered pipelining): the same-run baseline of the pipelined relay figure.
 */
final class NotPipelined implements RelayPublisher {

  private final RelayPublisher delegate;

  NotPipelined(RelayPublisher delegate) {
    this.delegate = delegate;
  }

  @Override
  public List<PublishOutcome> publish(List<Message> messages) throws InterruptedException {
    return delegate.publish(messages);
  }

  @Override
  public PendingPublish send(List<Message> messages) throws InterruptedException {
    return delegate.send(messages);
  }

  @Override
  public void close() {
    delegate.close();
  }
}
