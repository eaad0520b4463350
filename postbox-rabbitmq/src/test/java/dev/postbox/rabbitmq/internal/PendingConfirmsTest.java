package dev.postbox.rabbitmq.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.rabbitmq.RabbitUnroutableException;
import java.io.IOException;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Publishes waiting at once on one channel, each settled by its own confirm: the responder's
 * replies no longer wait for each other's confirm round trip.
 */
class PendingConfirmsTest {

  private final PendingConfirms confirms = new PendingConfirms();

  @Test
  void manyPublishesWaitAtOnceAndAMultipleAckSettlesThoseUpToItsSequence() {
    CompletableFuture<Optional<String>> a = confirms.publishing(1, "a");
    CompletableFuture<Optional<String>> b = confirms.publishing(2, "b");
    CompletableFuture<Optional<String>> c = confirms.publishing(3, "c");
    assertThat(confirms.size()).isEqualTo(3);

    confirms.acked(2, true);

    assertThat(a).isCompletedWithValue(Optional.empty());
    assertThat(b).isCompletedWithValue(Optional.empty());
    assertThat(c).isNotDone();
    confirms.acked(3, false);
    assertThat(c).isCompletedWithValue(Optional.empty());
    assertThat(confirms.size()).isZero();
  }

  @Test
  void aSingleAckSettlesOnlyItsOwnPublish() {
    CompletableFuture<Optional<String>> a = confirms.publishing(1, "a");
    CompletableFuture<Optional<String>> b = confirms.publishing(2, "b");

    confirms.acked(2, false);

    assertThat(a).isNotDone();
    assertThat(b).isCompletedWithValue(Optional.empty());
  }

  @Test
  void aReturnedMessageCompletesWithTheReasonAtItsAckAndOthersDoNot() {
    CompletableFuture<Optional<String>> a = confirms.publishing(1, "a");
    CompletableFuture<Optional<String>> b = confirms.publishing(2, "b");

    confirms.returned("b", "312 NO_ROUTE");
    assertThat(b).as("a return precedes its ack; the ack settles it").isNotDone();
    confirms.acked(2, true);

    assertThat(a).isCompletedWithValue(Optional.empty());
    assertThat(b).isCompletedWithValue(Optional.of("312 NO_ROUTE"));
  }

  @Test
  void aNackFailsWithAnUnroutableException() {
    CompletableFuture<Optional<String>> a = confirms.publishing(1, "a");
    CompletableFuture<Optional<String>> b = confirms.publishing(2, "b");

    confirms.nacked(1, false);

    assertThat(a)
        .failsWithin(java.time.Duration.ZERO)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(RabbitUnroutableException.class);
    assertThat(b).isNotDone();
  }

  @Test
  void theChannelsLossFailsEveryOutstandingPublishAndAPublishThatThrewIsForgotten() {
    CompletableFuture<Optional<String>> a = confirms.publishing(1, "a");
    CompletableFuture<Optional<String>> b = confirms.publishing(2, "b");
    confirms.acked(1, false);
    confirms.publishing(3, "c");
    confirms.notPublished(3);

    confirms.channelLost("connection reset");

    assertThat(a).isCompletedWithValue(Optional.empty());
    assertThat(b)
        .failsWithin(java.time.Duration.ZERO)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .withCauseInstanceOf(IOException.class)
        .withMessageContaining("connection reset");
    assertThat(confirms.size()).isZero();
  }
}
