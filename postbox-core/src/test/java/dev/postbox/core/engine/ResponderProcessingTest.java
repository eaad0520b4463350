package dev.postbox.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.reply.ReplySender;
import dev.postbox.core.engine.reply.ResponderHandler;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.reply.InvalidRequestException;
import dev.postbox.core.reply.RequestReplyHeaders;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The responder's handler on the engine: one effect and one stored reply per request id, the same
 * reply again for a repeated request, a failed send retried with the stored reply, and requests
 * that cannot be answered dead-lettered with the reason.
 */
class ResponderProcessingTest {

  record Sent(String replyTo, Message reply) {}

  private final StoredResultProcessingTest.InMemoryInbox inbox =
      new StoredResultProcessingTest.InMemoryInbox();
  private final List<Sent> sent = new CopyOnWriteArrayList<>();
  private final List<DeadLetterStore.NewDeadLetter> deadLetters = new CopyOnWriteArrayList<>();
  private final AtomicInteger charges = new AtomicInteger();
  private final AtomicInteger failSends = new AtomicInteger();
  private final FakeTime time = FakeTime.create();

  private final ReplySender sender =
      new ReplySender() {
        @Override
        public String topicOf(String replyTo) {
          if (!replyTo.startsWith("replies")) {
            throw new InvalidRequestException("not a reply address: " + replyTo);
          }
          return replyTo;
        }

        @Override
        public void send(String replyTo, Message reply) {
          if (failSends.getAndDecrement() > 0) {
            throw new IllegalStateException("reply queue gone");
          }
          sent.add(new Sent(replyTo, reply));
        }
      };

  private DeliveryProcessor processor() {
    DeadLetterStore store =
        (DeadLetterStore)
            java.lang.reflect.Proxy.newProxyInstance(
                DeadLetterStore.class.getClassLoader(),
                new Class<?>[] {DeadLetterStore.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("add")) {
                    deadLetters.add((DeadLetterStore.NewDeadLetter) args[0]);
                    return 1L;
                  }
                  throw new UnsupportedOperationException(method.getName());
                });
    return DeliveryProcessor.builder(
            EngineTesting.TRANSPORT,
            Subscription.builder("payments-service")
                .topics("payments")
                .guarantee(DeliveryGuarantee.EFFECTIVELY_ONCE)
                .failureHandler(
                    FailureHandlers.of(
                        RetryPolicy.builder()
                            .maxAttempts(3)
                            .backoff(new Backoff(Duration.ofMillis(1), Duration.ofMillis(2), 2, 0))
                            .build()))
                .build())
        .handler(
            new ResponderHandler(
                d ->
                    Payload.json(
                        "{\"authorised\":true,\"charge\":" + charges.incrementAndGet() + "}"),
                sender,
                "charge.authorised",
                "/payments",
                time.clock()))
        .inbox(Optional.of(inbox))
        .deadLetters(Optional.of(store))
        .time(time.clock(), time, time)
        .metrics(PostboxMetrics.noop())
        .openTelemetry(io.opentelemetry.api.OpenTelemetry.noop())
        .build();
  }

  private static Message request() {
    Message m = Message.builder("payments", "charge.authorise").key("order-1").build();
    return m.toBuilder()
        .correlationId(m.id().toString())
        .header(RequestReplyHeaders.REPLY_TO, "replies-a")
        .build();
  }

  private static DeliveryProcessor.Incoming incoming(Message m) {
    return new DeliveryProcessor.Incoming("payments", 0, 1, () -> m, null, new byte[0], List.of());
  }

  @Test
  void aRepeatedRequestGetsTheSameReplyWithoutChargingAgain() {
    DeliveryProcessor p = processor();
    Message req = request();
    assertThat(p.process(incoming(req), () -> true)).isTrue();
    assertThat(p.process(incoming(req), () -> true)).isTrue();

    assertThat(charges).as("charged once").hasValue(1);
    assertThat(sent).hasSize(2);
    Message first = sent.get(0).reply();
    Message again = sent.get(1).reply();
    assertThat(sent).extracting(Sent::replyTo).containsOnly("replies-a");
    assertThat(again.id()).as("the same reply").isEqualTo(first.id());
    assertThat(again.payload()).isEqualTo(first.payload());
    assertThat(first.correlationId()).contains(req.id().toString());
    assertThat(first.causationId()).contains(req.id().toString());
    assertThat(first.type()).isEqualTo("charge.authorised");
    assertThat(first.topic()).isEqualTo("replies-a");
    assertThat(first.key()).contains("order-1");
  }

  @Test
  void aReplyThatCannotBeSentIsRetriedWithTheStoredReply() {
    failSends.set(1);
    DeliveryProcessor p = processor();
    assertThat(p.process(incoming(request()), () -> true)).isTrue();
    assertThat(charges).hasValue(1);
    assertThat(sent)
        .singleElement()
        .satisfies(s -> assertThat(s.reply().payload().asString()).contains("\"charge\":1"));
    assertThat(deadLetters).isEmpty();
  }

  @Test
  void aReplyThatNeverGoesOutEndsInTheDeadLettersWithTheReason() {
    failSends.set(100);
    DeliveryProcessor p = processor();
    assertThat(p.process(incoming(request()), () -> true)).isTrue();
    assertThat(charges).as("the effect stays once").hasValue(1);
    assertThat(deadLetters)
        .singleElement()
        .satisfies(d -> assertThat(d.errorMessage()).contains("reply queue gone"));
  }

  @Test
  void aRequestWithoutAReplyAddressIsDeadLetteredWithThatReasonAndNotApplied() {
    DeliveryProcessor p = processor();
    Message bare = Message.builder("payments", "charge.authorise").build();
    Message noReplyTo = bare.toBuilder().correlationId(bare.id().toString()).build();
    assertThat(p.process(incoming(noReplyTo), () -> true)).isTrue();
    Message noCorrelation =
        Message.builder("payments", "charge.authorise")
            .header(RequestReplyHeaders.REPLY_TO, "replies-a")
            .build();
    assertThat(p.process(incoming(noCorrelation), () -> true)).isTrue();
    Message foreignAddress =
        request().toBuilder().header(RequestReplyHeaders.REPLY_TO, "amqp://elsewhere").build();
    assertThat(p.process(incoming(foreignAddress), () -> true)).isTrue();

    assertThat(charges).hasValue(0);
    assertThat(sent).isEmpty();
    assertThat(deadLetters)
        .extracting(DeadLetterStore.NewDeadLetter::errorMessage)
        .satisfiesExactly(
            m -> assertThat(m).contains("has no reply address"),
            m -> assertThat(m).contains("has no correlation id"),
            m -> assertThat(m).contains("not a reply address"));
    assertThat(deadLetters)
        .extracting(DeadLetterStore.NewDeadLetter::attempts)
        .as("not retried")
        .containsOnly(1);
    assertThat(inbox.rows).as("nothing recorded").isEmpty();
  }
}
