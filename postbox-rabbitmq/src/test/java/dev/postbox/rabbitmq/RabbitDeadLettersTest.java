package dev.postbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Message;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A RabbitMQ dead letter reads back into the message it carried; others go to the fallback. */
class RabbitDeadLettersTest {

  private static DeadLetter letter(
      String topic, List<DeadLetterStore.Header> headers, byte[] body) {
    return new DeadLetter(
        1,
        new DeadLetterStore.NewDeadLetter(
            "inventory",
            topic,
            0,
            7,
            Optional.empty(),
            Optional.empty(),
            null,
            body,
            headers,
            DeadLetterStore.Classification.PERMANENT,
            "E",
            "m",
            "",
            "f",
            1,
            Instant.EPOCH,
            Instant.EPOCH),
        DeadLetterStore.Status.PENDING,
        0,
        Instant.EPOCH);
  }

  @Test
  void aRabbitLetterIsReadBackAsTheMessageTheSubscriberReceived() {
    Message m =
        Message.builder("orders", "order.created")
            .key("k-1")
            .tenant("acme")
            .header("seq", "3")
            .jsonPayload("{\"sku\":\"A\"}")
            .build();
    List<DeadLetterStore.Header> stored =
        RabbitMessages.deadLetterHeaders(RabbitMessages.toProperties(m));
    DeadLetter letter = letter("orders", stored, m.payload().bytes());

    assertThat(RabbitDeadLetters.isRabbit(letter)).isTrue();
    Message back = RabbitDeadLetters.decoderOr(l -> null).apply(letter);
    assertThat(back.id()).isEqualTo(m.id());
    assertThat(back.type()).isEqualTo("order.created");
    assertThat(back.key()).contains("k-1");
    assertThat(back.tenant()).isEqualTo(m.tenant());
    assertThat(back.header("seq")).contains("3");
    assertThat(back.payload().asString()).isEqualTo("{\"sku\":\"A\"}");
  }

  @Test
  void aLetterWithoutRabbitHeadersGoesToTheFallback() {
    DeadLetter kafka =
        letter(
            "orders",
            List.of(new DeadLetterStore.Header("ce_id", "x".getBytes(StandardCharsets.UTF_8))),
            new byte[0]);
    Message fallback = Message.builder("orders", "t").build();
    assertThat(RabbitDeadLetters.isRabbit(kafka)).isFalse();
    assertThat(RabbitDeadLetters.decoderOr(l -> fallback).apply(kafka)).isSameAs(fallback);
  }
}
