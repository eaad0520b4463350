package dev.postbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Message;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class DuplicatingPublisherTest {

  /** Appends what it acknowledges to a "topic"; fails the messages whose key is in failKeys. */
  static class FakePublisher implements RelayPublisher {
    final List<Message> topic = new ArrayList<>();
    final List<Integer> calls = new ArrayList<>();
    Set<String> failKeys = Set.of();

    @Override
    public List<PublishOutcome> publish(List<Message> messages) {
      calls.add(messages.size());
      List<PublishOutcome> out = new ArrayList<>();
      for (Message m : messages) {
        if (failKeys.contains(m.key().orElseThrow())) {
          out.add(new PublishOutcome.Failed(new IllegalStateException("down"), true));
        } else {
          topic.add(m);
          out.add(PublishOutcome.ACKNOWLEDGED);
        }
      }
      return out;
    }

    @Override
    public void close() {}
  }

  private static Message message(String type, String key) {
    return Message.builder("t", type).key(key).jsonPayload("{}").build();
  }

  @Test
  void publishesTheChosenTypesAgainAfterTheBatchInOrder() throws Exception {
    FakePublisher fake = new FakePublisher();
    DuplicatingPublisher p = new DuplicatingPublisher(fake, Set.of("order.created"));
    Message a = message("order.created", "k1");
    Message b = message("order.imported", "k1");
    Message c = message("order.created", "k2");

    List<PublishOutcome> outcomes = p.publish(List.of(a, b, c));

    assertThat(outcomes).containsOnly(PublishOutcome.ACKNOWLEDGED).hasSize(3);
    assertThat(fake.topic).containsExactly(a, b, c, a, c);
    assertThat(p.secondCopies()).isEqualTo(2);
  }

  @Test
  void aMessageIsAcknowledgedOnlyIfBothCopiesWereAndFailedOnesAreNotSentAgain() throws Exception {
    FakePublisher fake =
        new FakePublisher() {
          int call;

          @Override
          public List<PublishOutcome> publish(List<Message> messages) {
            failKeys = ++call == 1 ? Set.of("k2") : Set.of("k1");
            return super.publish(messages);
          }
        };
    DuplicatingPublisher p = new DuplicatingPublisher(fake, Set.of("order.created"));
    Message a = message("order.created", "k1");
    Message b = message("order.created", "k2");
    Message c = message("order.created", "k3");

    List<PublishOutcome> outcomes = p.publish(List.of(a, b, c));

    assertThat(fake.calls).containsExactly(3, 2); // b failed the first time: no second copy
    assertThat(fake.topic).containsExactly(a, c, c);
    assertThat(outcomes.get(0))
        .isInstanceOfSatisfying(
            PublishOutcome.Failed.class, f -> assertThat(f.permanent()).isFalse());
    assertThat(outcomes.get(1))
        .isInstanceOfSatisfying(
            PublishOutcome.Failed.class, f -> assertThat(f.permanent()).isTrue());
    assertThat(outcomes.get(2)).isEqualTo(PublishOutcome.ACKNOWLEDGED);
  }
}
