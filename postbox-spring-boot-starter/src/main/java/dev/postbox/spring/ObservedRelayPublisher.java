package dev.postbox.spring;

import dev.postbox.core.Message;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.RelayPublisher;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A {@link RelayPublisher} whose batches are observed ({@value PostboxObservations#RELAY_PUBLISH}):
 * an observation starts when a batch is sent and stops when its outcomes are in (a pipelining
 * publisher sends the next batch before the previous one's outcomes), with the batch's size and how
 * many failed; the first failure is the observation's error. Every call goes to the delegate
 * unchanged (a previous batch handed back to it is its own, unwrapped). No scope is opened: the
 * outcomes may be collected on another thread than the send.
 */
final class ObservedRelayPublisher implements RelayPublisher {

  private final RelayPublisher delegate;
  private final ObservationRegistry registry;
  private final String system;

  ObservedRelayPublisher(RelayPublisher delegate, ObservationRegistry registry, String system) {
    this.delegate = delegate;
    this.registry = registry;
    this.system = system;
  }

  private Observation start(List<Message> messages) {
    return Observation.createNotStarted(PostboxObservations.RELAY_PUBLISH, registry)
        .contextualName("postbox relay publish")
        .lowCardinalityKeyValue("messaging.system", system)
        .highCardinalityKeyValue("messaging.batch.message_count", Integer.toString(messages.size()))
        .start();
  }

  @Override
  public List<PublishOutcome> publish(List<Message> messages) throws InterruptedException {
    Observation o = start(messages);
    try {
      return Observed.finish(o, delegate.publish(messages));
    } catch (InterruptedException | RuntimeException e) {
      o.error(e);
      o.stop();
      throw e;
    }
  }

  @Override
  public PendingPublish send(List<Message> messages) throws InterruptedException {
    Observation o = start(messages);
    return Observed.pending(o, () -> delegate.send(messages));
  }

  @Override
  public PendingPublish send(List<Message> messages, List<LaneLease> leases)
      throws InterruptedException {
    Observation o = start(messages);
    return Observed.pending(o, () -> delegate.send(messages, leases));
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
  public PendingPublish sendAfter(PendingPublish previous, List<Message> messages)
      throws InterruptedException {
    Observation o = start(messages);
    return Observed.pending(o, () -> delegate.sendAfter(Observed.unwrap(previous), messages));
  }

  @Override
  public PendingPublish sendAfter(
      PendingPublish previous, List<Message> messages, List<LaneLease> leases)
      throws InterruptedException {
    Observation o = start(messages);
    return Observed.pending(
        o, () -> delegate.sendAfter(Observed.unwrap(previous), messages, leases));
  }

  @Override
  public boolean pipelinesInOrder() {
    return delegate.pipelinesInOrder();
  }

  @Override
  public void close() {
    delegate.close();
  }

  @Override
  public String toString() {
    return delegate.toString();
  }

  /** A delegate's pending batch whose observation stops once its outcomes are in. */
  private record Observed(PendingPublish delegate, Observation observation, AtomicBoolean done)
      implements PendingPublish {

    interface Send {
      PendingPublish send() throws InterruptedException;
    }

    static PendingPublish pending(Observation o, Send send) throws InterruptedException {
      try {
        return new Observed(send.send(), o, new AtomicBoolean());
      } catch (InterruptedException | RuntimeException e) {
        o.error(e);
        o.stop();
        throw e;
      }
    }

    static PendingPublish unwrap(PendingPublish p) {
      return p instanceof Observed observed ? observed.delegate() : p;
    }

    static List<PublishOutcome> finish(Observation o, List<PublishOutcome> outcomes) {
      long failed = 0;
      for (PublishOutcome outcome : outcomes) {
        if (outcome instanceof PublishOutcome.Failed f) {
          if (failed++ == 0) {
            o.error(f.error());
          }
        }
      }
      o.highCardinalityKeyValue("postbox.relay.failed", Long.toString(failed));
      o.stop();
      return outcomes;
    }

    @Override
    public List<PublishOutcome> outcomes() throws InterruptedException {
      return collected(delegate.outcomes());
    }

    @Override
    public List<PublishOutcome> outcomesWhenIdle() throws InterruptedException {
      return collected(delegate.outcomesWhenIdle());
    }

    private List<PublishOutcome> collected(List<PublishOutcome> outcomes) {
      return done.compareAndSet(false, true) ? finish(observation, outcomes) : outcomes;
    }
  }
}
