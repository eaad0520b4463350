package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Message;
import dev.postbox.core.spi.LaneLease;
import dev.postbox.core.spi.RelayPublisher;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The observing relay publisher changes nothing the relay relies on: a pipelining publisher gets
 * its own previous batch back in {@code sendAfter} (Kafka's and RabbitMQ's publishers pipeline only
 * behind a batch of their own type, and fall back to waiting otherwise), and each batch's
 * observation stops once, when its outcomes are in, counting the failed ones.
 */
class ObservedRelayPublisherTest {

  private final List<Observation.Context> stopped = new ArrayList<>();

  private ObservationRegistry registry() {
    ObservationRegistry r = ObservationRegistry.create();
    r.observationConfig()
        .observationHandler(
            new ObservationHandler<Observation.Context>() {
              @Override
              public boolean supportsContext(Observation.Context context) {
                return true;
              }

              @Override
              public void onStop(Observation.Context context) {
                stopped.add(context);
              }
            });
    return r;
  }

  /** A publisher that pipelines only behind its own batches, as the real ones do. */
  static final class Pipelining implements RelayPublisher {
    record Own(List<PublishOutcome> outcomes) implements PendingPublish {}

    final List<PendingPublish> previousSeen = new ArrayList<>();

    @Override
    public List<PublishOutcome> publish(List<Message> messages) {
      return outcomes(messages);
    }

    @Override
    public PendingPublish send(List<Message> messages, List<LaneLease> leases) {
      return new Own(outcomes(messages));
    }

    @Override
    public PendingPublish sendAfter(
        PendingPublish previous, List<Message> messages, List<LaneLease> leases) {
      previousSeen.add(previous);
      return new Own(outcomes(messages));
    }

    private static List<PublishOutcome> outcomes(List<Message> messages) {
      List<PublishOutcome> out = new ArrayList<>();
      for (Message m : messages) {
        out.add(
            m.type().equals("bad")
                ? new PublishOutcome.Failed(new IllegalStateException("refused"), false)
                : new PublishOutcome.Acknowledged());
      }
      return out;
    }

    @Override
    public boolean pipelinesInOrder() {
      return true;
    }

    @Override
    public void close() {}
  }

  private static Message message(String type) {
    return Message.builder("t", type).key("k").jsonPayload("1").build();
  }

  @Test
  void thePublisherGetsItsOwnPreviousBatchAndEachObservationStopsOnce() throws Exception {
    Pipelining delegate = new Pipelining();
    RelayPublisher observed = new ObservedRelayPublisher(delegate, registry(), "kafka");
    assertThat(observed.pipelinesInOrder()).isTrue();

    RelayPublisher.PendingPublish first =
        observed.send(List.of(message("ok"), message("bad")), List.of());
    RelayPublisher.PendingPublish second =
        observed.sendAfter(first, List.of(message("ok")), List.of());
    assertThat(delegate.previousSeen).hasSize(1);
    assertThat(delegate.previousSeen.get(0)).isInstanceOf(Pipelining.Own.class);
    assertThat(stopped).as("nothing collected yet").isEmpty();

    assertThat(first.outcomes()).hasSize(2);
    first.outcomesWhenIdle(); // collected again: the observation stopped already
    assertThat(second.outcomesWhenIdle()).hasSize(1);

    assertThat(stopped).hasSize(2);
    assertThat(stopped.get(0).getHighCardinalityKeyValue("postbox.relay.failed").getValue())
        .isEqualTo("1");
    assertThat(stopped.get(0).getError()).hasMessage("refused");
    assertThat(stopped.get(1).getHighCardinalityKeyValue("postbox.relay.failed").getValue())
        .isEqualTo("0");
    assertThat(stopped.get(1).getError()).isNull();
  }
}
