package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.Message;
import dev.postbox.core.reply.DurableRequests;
import dev.postbox.core.reply.InvalidRequestException;
import dev.postbox.core.reply.RequestReplyHeaders;
import org.junit.jupiter.api.Test;

/**
 * The two reply addresses a RabbitMQ request can name: a requester's queue, or a durable request's
 * reply topic ({@code /exchanges/<topic>}); anything else (a Kafka address among them) is refused
 * before the effect.
 */
class ReplyAddressTest {

  @Test
  void aQueueNameIsAReplyQueueAndTheReplyCarriesItAsTopic() {
    ReplyAddress a = ReplyAddress.parse("postbox.replies.orders-a.1f0e");
    assertThat(a).isEqualTo(new ReplyAddress.Queue("postbox.replies.orders-a.1f0e"));
    assertThat(a.topic()).isEqualTo("postbox.replies.orders-a.1f0e");
  }

  @Test
  void aDurableRequestNamesItsReplyTopicsExchange() {
    DurableRequests payments = RabbitRequester.durableRequests("payments.replies");
    assertThat(payments.replyAddress()).isEqualTo("/exchanges/payments.replies");
    Message request =
        payments.request(
            Message.builder("payments", "charge.authorise")
                .key("order-1")
                .jsonPayload("{}")
                .build());
    assertThat(request.header(RequestReplyHeaders.REPLY_TO))
        .contains("/exchanges/payments.replies");
    assertThat(request.correlationId()).contains(request.id().toString());
    ReplyAddress a = ReplyAddress.parse(payments.replyAddress());
    assertThat(a).isEqualTo(new ReplyAddress.Topic("payments.replies"));
    assertThat(a.topic()).isEqualTo("payments.replies");
  }

  @Test
  void otherAddressesAreRefusedAsInvalidRequests() {
    for (String replyTo :
        new String[] {
          "payments.replies:0", // Kafka's topic:partition
          "/exchanges/",
          "/exchanges/a/b",
          "/exchanges/..",
          "/queues/x",
          "amq.direct/x",
          "x".repeat(250)
        }) {
      assertThatThrownBy(() -> ReplyAddress.parse(replyTo))
          .as(replyTo)
          .isInstanceOf(InvalidRequestException.class)
          .hasMessageContaining("reply-to '" + replyTo + "'");
    }
  }

  @Test
  void anIllegalReplyTopicFailsAtOnceNamingTheOption() {
    for (String topic : new String[] {"", ".", "a b", "a:0", "a/b", "x".repeat(250)}) {
      assertThatThrownBy(() -> RabbitRequester.durableRequests(topic))
          .as(topic)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("replyTopic must be a topic name");
    }
    assertThatThrownBy(() -> RabbitRequester.durableRequests(null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("replyTopic");
  }
}
