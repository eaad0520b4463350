package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.ReplayHeaders;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.time.FakeTime;
import io.opentelemetry.api.OpenTelemetry;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;
import org.junit.jupiter.api.Test;

/**
 * A replayed dead letter addressed to one consumer ({@link ReplayHeaders#TARGET}) is applied by
 * that consumer only: every other one finishes it at the door, on each path into the engine, and
 * counts it.
 */
class ReplayAdmissionTest {

  private final FakeTime time = FakeTime.create();
  private final List<Message> applied = new CopyOnWriteArrayList<>();
  private final AtomicLong skipped = new AtomicLong();

  private final PostboxMetrics metrics =
      new PostboxMetrics() {
        @Override
        public Counter counter(MetricName name, Tags tags) {
          return name == MetricName.CONSUMER_REPLAYS_SKIPPED ? skipped::addAndGet : n -> {};
        }

        @Override
        public Timer timer(MetricName name, Tags tags) {
          return d -> {};
        }

        @Override
        public void gauge(MetricName name, Tags tags, DoubleSupplier value) {}
      };

  private final DeliveryProcessor ledger =
      DeliveryProcessor.builder(
              EngineTesting.TRANSPORT,
              Subscription.builder("ledger")
                  .topics("orders")
                  .guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
                  .build())
          .handler(d -> applied.add(d.message()))
          .batchHandler(ds -> ds.forEach(d -> applied.add(d.message())))
          .time(time.clock(), time, time)
          .metrics(metrics)
          .openTelemetry(OpenTelemetry.noop())
          .build();

  private static Message replayFor(String target) {
    return Message.builder("orders", "order.created")
        .key("o-1")
        .header(ReplayHeaders.DEAD_LETTER, "17")
        .header(ReplayHeaders.REPLAYED_BY, "alice")
        .header(ReplayHeaders.TARGET, target)
        .build();
  }

  private static DeliveryProcessor.Incoming incoming(Message m) {
    return new DeliveryProcessor.Incoming("orders", 0, 7, () -> m, null, new byte[0], List.of());
  }

  @Test
  void aReplayForAnotherConsumerIsFinishedUnappliedOnEveryPathAndCounted() {
    Message elsewhere = replayFor("billing");

    assertThat(ledger.process(incoming(elsewhere), () -> true)).isTrue();
    assertThat(ledger.processBatch(List.of(incoming(elsewhere)), () -> true)).isTrue();
    assertThat(ledger.applyDelayed(incoming(elsewhere), 2)).isNull();

    assertThat(applied).isEmpty();
    assertThat(skipped).hasValue(3);
    assertThat(ledger.stats().applied()).isZero();
  }

  @Test
  void aReplayForThisConsumerAndAnOrdinaryMessageAreApplied() {
    Message mine = replayFor("ledger");
    Message ordinary = Message.builder("orders", "order.created").key("o-2").build();

    assertThat(ledger.process(incoming(mine), () -> true)).isTrue();
    assertThat(ledger.process(incoming(ordinary), () -> true)).isTrue();

    assertThat(applied).containsExactly(mine, ordinary);
    assertThat(skipped).hasValue(0);
  }
}
