package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Message;
import dev.postbox.core.codec.Decoded;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.FailureDecision;
import dev.postbox.core.consumer.FailureHandler;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import java.sql.Connection;
import java.util.Optional;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.junit.jupiter.api.Test;

/**
 * Kafka's binding to the consumer engine: Kafka's retriable errors stay transient for a policy
 * whose own lists would give up (they were matched by class name in core before the engine took the
 * adapter's predicate), and spans are tagged as Kafka's.
 */
class KafkaBindingTest {

  private static final Message M = Message.builder("orders", "order.created").key("o-1").build();

  /** Only the built-in lists (and the transport's errors) decide. */
  private final FailureHandler strict =
      FailureHandlers.of(RetryPolicy.builder().retryIf(t -> false).build())
          .withTransientErrors(KafkaBinding.TRANSPORT.retriable());

  @Test
  void kafkasRetriableErrorsAreTransientAndOthersAreNot() {
    assertThat(strict.decide(delivery(), new NetworkException("kafka")))
        .isInstanceOf(FailureDecision.Retry.class);
    assertThat(strict.decide(delivery(), new NotLeaderOrFollowerException("not leader")))
        .isInstanceOf(FailureDecision.Retry.class);
    assertThat(
            strict.decide(
                delivery(), new IllegalStateException("wrapped", new NetworkException("kafka"))))
        .isInstanceOf(FailureDecision.Retry.class);
    assertThat(strict.decide(delivery(), new RecordTooLargeException("too large")))
        .isInstanceOf(FailureDecision.GiveUp.class);
  }

  @Test
  void spansAreTaggedAsKafkas() {
    assertThat(KafkaBinding.TRANSPORT.messagingSystem()).isEqualTo("kafka");
    assertThat(KafkaBinding.TRANSPORT.positionAttribute()).isEqualTo("messaging.kafka.offset");
  }

  private static Delivery delivery() {
    return new Delivery() {
      @Override
      public Message message() {
        return M;
      }

      @Override
      public String topic() {
        return "orders";
      }

      @Override
      public int partition() {
        return 0;
      }

      @Override
      public long offset() {
        return 7;
      }

      @Override
      public int attempt() {
        return 1;
      }

      @Override
      public Optional<Connection> connection() {
        return Optional.empty();
      }

      @Override
      public Decoded<Object> decoded() {
        throw new UnsupportedOperationException();
      }

      @Override
      public boolean advanceVersion(String entity, long version) {
        throw new UnsupportedOperationException();
      }
    };
  }
}
