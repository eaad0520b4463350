package dev.postbox.jdbc;

import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.Header;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

/** Dead letters for tests. */
final class DeadLetterTestData {

  private DeadLetterTestData() {}

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A letter of {@code consumer} on {@code topic} with key {@code key}, failed first at {@code at}.
   */
  static NewDeadLetter letter(
      String consumer, String topic, String key, String fingerprint, Instant at) {
    UUID id = UUID.randomUUID();
    return new NewDeadLetter(
        consumer,
        topic,
        3,
        1234L,
        Optional.of(id),
        Optional.of("order.created"),
        key == null ? null : utf8(key),
        utf8("{\"order\":\"" + key + "\"}"),
        List.of(
            new Header("ce_id", utf8(id.toString())), new Header("ce_type", utf8("order.created"))),
        Classification.PERMANENT,
        "java.lang.IllegalStateException",
        "order " + key + " is broken",
        "java.lang.IllegalStateException: broken\n\tat Somewhere.run(Somewhere.java:1)\n",
        fingerprint,
        1,
        at,
        at.plusSeconds(5));
  }

  /** The same letter with other headers. */
  static NewDeadLetter withHeaders(NewDeadLetter l, List<Header> headers) {
    return new NewDeadLetter(
        l.consumer(),
        l.topic(),
        l.partition(),
        l.offset(),
        l.messageId(),
        l.type(),
        l.key(),
        l.value(),
        headers,
        l.classification(),
        l.errorClass(),
        l.errorMessage(),
        l.stackTrace(),
        l.fingerprint(),
        l.attempts(),
        l.firstFailure(),
        l.lastFailure());
  }

  /** The same letter, failed last at {@code lastFailure}. */
  static NewDeadLetter lastFailedAt(NewDeadLetter l, Instant lastFailure) {
    return copy(l, l.messageId(), lastFailure);
  }

  /** The same letter, for the message {@code messageId}. */
  static NewDeadLetter withMessageId(NewDeadLetter l, java.util.UUID messageId) {
    return copy(l, java.util.Optional.of(messageId), l.lastFailure());
  }

  private static NewDeadLetter copy(
      NewDeadLetter l, java.util.Optional<java.util.UUID> messageId, Instant lastFailure) {
    return new NewDeadLetter(
        l.consumer(),
        l.topic(),
        l.partition(),
        l.offset(),
        messageId,
        l.type(),
        l.key(),
        l.value(),
        l.headers(),
        l.classification(),
        l.errorClass(),
        l.errorMessage(),
        l.stackTrace(),
        l.fingerprint(),
        l.attempts(),
        l.firstFailure(),
        lastFailure);
  }
}
