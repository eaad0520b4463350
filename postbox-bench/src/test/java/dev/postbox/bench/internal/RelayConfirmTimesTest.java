package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The relay's confirms as the race reads them: each acknowledged message once, a failed one not,
 * and the delegate's own pending publish handed back to it, so that it pipelines as without the
 * wrapper.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class RelayConfirmTimesTest {

  @Test
  void acknowledgedMessagesAreReportedWhenTheRelayHasTheirOutcomes() throws Exception {
    Message ok = BenchEnv.message("t", 1);
    Message failed = BenchEnv.message("t", 2);
    Message next = BenchEnv.message("t", 3);
    Pipelining delegate = new Pipelining();
    try (E2eTimes times = E2eTimes.open(false)) {
      RelayConfirmTimes publisher = new RelayConfirmTimes(delegate, times);

      RelayPublisher.PendingPublish first = publisher.send(List.of(ok, failed), List.of());
      RelayPublisher.PendingPublish second = publisher.sendAfter(first, List.of(next), List.of());
      long before = E2eTimes.nowMicros();
      first.outcomes();
      second.outcomes();
      second.outcomes(); // the relay may ask twice: the first reading counts

      assertThat(publisher.pipelinesInOrder()).isTrue();
      assertThat(delegate.previous)
          .as("the delegate's own pending publish")
          .containsExactly(delegate.sent.get(0));
      for (Message m : List.of(ok, failed, next)) {
        times.applied(m.id(), before + 1_000_000);
      }
      E2eFigures.Events events =
          times.take(Map.of(ok.id(), before - 1_000, failed.id(), before - 1_000, next.id(), 0L));
      assertThat(events.size()).as("the failed message has no confirm").isEqualTo(2);
      for (long ack : events.ackMicros()) {
        assertThat(ack).isBetween(before, E2eTimes.nowMicros());
      }
    }
  }

  /** A publisher that pipelines: every message acknowledged but the second of the first batch. */
  private static final class Pipelining implements RelayPublisher {
    final List<PendingPublish> sent = new ArrayList<>();
    final List<PendingPublish> previous = new ArrayList<>();

    @Override
    public List<PublishOutcome> publish(List<Message> messages) {
      throw new UnsupportedOperationException("the relay sends");
    }

    @Override
    public PendingPublish send(List<Message> messages) {
      List<PublishOutcome> o = new ArrayList<>();
      for (int i = 0; i < messages.size(); i++) {
        o.add(
            sent.isEmpty() && i == 1
                ? new PublishOutcome.Failed(new IllegalStateException("nacked"), false)
                : PublishOutcome.ACKNOWLEDGED);
      }
      PendingPublish p = () -> o;
      sent.add(p);
      return p;
    }

    @Override
    public PendingPublish sendAfter(PendingPublish prior, List<Message> messages) {
      previous.add(prior);
      return send(messages);
    }

    @Override
    public boolean pipelinesInOrder() {
      return true;
    }

    @Override
    public void close() {}
  }
}
