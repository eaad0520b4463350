package dev.postbox.rabbitmq.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The headers of the dead-letter exchange copy, without a broker. */
class DeadLetterCopyTest {

  @Test
  void saysWhyKeepsTheMessageAndTheBrokersHopsAndDropsOurRetryTier() {
    AMQP.BasicProperties received =
        new AMQP.BasicProperties.Builder()
            .messageId("m-1")
            .contentType("application/json")
            .headers(
                Map.of(
                    "ce_id",
                    "m-1",
                    "x-death",
                    List.of(Map.of("count", 1L)),
                    WaitQueues.TIER,
                    "2",
                    DeadLetterCopy.ERROR,
                    "forged"))
            .build();
    AMQP.BasicProperties p =
        DeadLetterCopy.properties(received, "orders.shipping.0", letter("boom\nline 2", 4));
    Map<String, Object> h = p.getHeaders();
    assertThat(p.getMessageId()).isEqualTo("m-1");
    assertThat(p.getContentType()).isEqualTo("application/json");
    assertThat(h).containsEntry("ce_id", "m-1").containsKey("x-death");
    assertThat(h).doesNotContainKey(WaitQueues.TIER);
    assertThat(h)
        .containsEntry(DeadLetterCopy.ERROR, "java.lang.IllegalStateException: boom line 2")
        .containsEntry(DeadLetterCopy.ERROR_CLASS, "java.lang.IllegalStateException")
        .containsEntry(DeadLetterCopy.ATTEMPTS, 4)
        .containsEntry(DeadLetterCopy.SUBSCRIPTION, "shipping")
        .containsEntry(DeadLetterCopy.FIRST_FAILURE, "2026-12-05T04:00:00Z")
        .containsEntry(DeadLetterCopy.ORIGIN, "orders.shipping.0");
  }

  @Test
  void anErrorWithoutMessageIsItsClassName() {
    AMQP.BasicProperties p =
        DeadLetterCopy.properties(new AMQP.BasicProperties(), "q", letter("null", 1));
    assertThat(p.getHeaders())
        .containsEntry(DeadLetterCopy.ERROR, "java.lang.IllegalStateException");
  }

  @Test
  void safeTextHasNoControlCharactersNoLoneSurrogatesAndIsCutAtTheLimit() {
    assertThat(DeadLetterCopy.safe("a\r\nb\tc\u0000d\u2028e", 100)).isEqualTo("a  b c d e");
    assertThat(DeadLetterCopy.safe("x\uD800y", 100)).isEqualTo("x?y");
    assertThat(DeadLetterCopy.safe("abcdefghij", 10)).isEqualTo("abcdefghij");
    assertThat(DeadLetterCopy.safe("abcdefghijk", 10)).isEqualTo("abcdefg...");
    // an emoji (a surrogate pair) across the cut is dropped whole, never split
    assertThat(DeadLetterCopy.safe("abcdef\uD83D\uDE00xyz", 10)).isEqualTo("abcdef...");
    assertThat(DeadLetterCopy.safe(null, 10)).isEmpty();
    assertThat(DeadLetterCopy.safe("é".repeat(5_000), DeadLetterCopy.MAX_ERROR))
        .hasSize(DeadLetterCopy.MAX_ERROR);
  }

  private static NewDeadLetter letter(String message, int attempts) {
    return new NewDeadLetter(
        "shipping",
        "orders",
        0,
        7L,
        Optional.empty(),
        Optional.empty(),
        null,
        new byte[0],
        List.of(),
        Classification.RETRIES_EXHAUSTED,
        IllegalStateException.class.getName(),
        message,
        "",
        "f",
        attempts,
        Instant.parse("2026-12-05T04:00:00Z"),
        Instant.parse("2026-12-05T04:00:01Z"));
  }
}
