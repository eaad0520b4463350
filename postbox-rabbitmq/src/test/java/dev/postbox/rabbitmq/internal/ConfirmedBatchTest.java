package dev.postbox.rabbitmq.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.rabbitmq.RabbitUnroutableException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Confirms, returns and channel loss mapped to one outcome per message, in send order. */
class ConfirmedBatchTest {

  private final Object channel = new Object();

  @Test
  void multipleAckResolvesEverythingUpToItsSequence() throws Exception {
    ConfirmedBatch b = new ConfirmedBatch(channel, 3);
    b.published(11, 0, "a");
    b.published(12, 1, "b");
    b.published(13, 2, "c");
    b.acked(12, true);
    assertThat(b.await(Duration.ZERO)).isFalse();
    b.acked(13, false);
    assertThat(b.await(Duration.ofSeconds(1))).isTrue();
    assertThat(b.outcomes()).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
  }

  @Test
  void oneMessagesOutcomeIsKnownOnceItsConfirmCame() throws Exception {
    ConfirmedBatch b = new ConfirmedBatch(channel, 2);
    b.published(5, 0, "a");
    b.published(6, 1, "b");
    assertThat(b.outcomeOf(0, Duration.ZERO)).as("no confirm yet").isNull();
    b.nacked(5, false);
    assertThat(b.outcomeOf(0, Duration.ZERO)).isInstanceOf(PublishOutcome.Failed.class);
    assertThat(b.outcomeOf(1, Duration.ZERO)).as("still unconfirmed").isNull();
    b.acked(6, false);
    assertThat(b.outcomeOf(1, Duration.ofSeconds(1)))
        .isInstanceOf(PublishOutcome.Acknowledged.class);
  }

  @Test
  void aReturnBeforeItsAckIsATopicWideFailure() throws Exception {
    ConfirmedBatch b = new ConfirmedBatch(channel, 2);
    b.published(1, 0, "a");
    b.published(2, 1, "b");
    b.returned("b", 312, "NO_ROUTE", "orders");
    b.acked(2, true);
    assertThat(b.await(Duration.ofSeconds(1))).isTrue();
    List<PublishOutcome> out = b.outcomes();
    assertThat(out.get(0)).isInstanceOf(PublishOutcome.Acknowledged.class);
    assertThat(out.get(1))
        .isInstanceOfSatisfying(
            PublishOutcome.Failed.class,
            f -> {
              assertThat(f.topicWide()).isTrue();
              assertThat(f.error())
                  .isInstanceOf(RabbitUnroutableException.class)
                  .hasMessageContaining("NO_ROUTE");
            });
  }

  @Test
  void nackAndChannelLossAreTransientAndEachMessageResolvesOnce() throws Exception {
    ConfirmedBatch b = new ConfirmedBatch(channel, 4);
    b.published(1, 0, "a");
    b.published(2, 1, "b");
    b.published(3, 2, "c");
    b.notSent(3, new PublishOutcome.Failed(new IllegalStateException("not sent"), false));
    b.nacked(1, false);
    b.lost(new IllegalStateException("connection reset"));
    b.acked(3, true); // too late: already resolved as lost
    assertThat(b.await(Duration.ofSeconds(1))).isTrue();
    assertThat(b.outcomes())
        .allSatisfy(o ->
            assertThat(o)
                .isInstanceOfSatisfying(
                    PublishOutcome.Failed.class, f -> assertThat(f.unpublishable()).isFalse()));
    assertThat(((PublishOutcome.Failed) b.outcomes().get(1)).error())
        .hasMessage("connection reset");
  }

  @Test
  void anOutcomeThatNeverCameIsATransientFailure() throws Exception {
    ConfirmedBatch b = new ConfirmedBatch(channel, 1);
    b.published(1, 0, "a");
    assertThat(b.await(Duration.ofMillis(1))).isFalse();
    assertThat(b.outcomes().get(0)).isInstanceOf(PublishOutcome.Failed.class);
    assertThat(b.on(channel)).isTrue();
    assertThat(b.on(new Object())).isFalse();
  }
}
