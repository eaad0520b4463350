package dev.postbox.core.engine;

import dev.postbox.core.codec.StoredText;
import dev.postbox.core.spi.DeadLetterStore.Header;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What is left to keep of a dead letter its store refused for good: first the same record with
 * every text escaped to printable ASCII ({@link StoredText#ascii}, reversible; key, value and
 * header values are bytes and stay as they were), then only its position and error. The reason is
 * added to the error message.
 */
final class ReducedLetters {

  private ReducedLetters() {}

  /** The letters to try after {@code letter} was refused with {@code sqlState}, in order. */
  static List<NewDeadLetter> after(NewDeadLetter letter, String sqlState) {
    return List.of(escaped(letter, sqlState), positionOnly(letter, sqlState));
  }

  /** The same record, every text escaped to printable ASCII. */
  static NewDeadLetter escaped(NewDeadLetter l, String sqlState) {
    List<Header> headers = new ArrayList<>(l.headers().size());
    for (Header h : l.headers()) {
      headers.add(new Header(StoredText.ascii(h.name()), h.value()));
    }
    return reduced(
        l,
        l.type().map(StoredText::ascii),
        l.key(),
        l.value(),
        headers,
        StoredText.ascii(
            "the dead-letter store refused this letter as it was (SQLSTATE "
                + sqlState
                + "); its texts are kept escaped: "
                + l.errorMessage()),
        StoredText.ascii(l.stackTrace()));
  }

  /** Its position and error only: the record itself is still in the topic while it is retained. */
  static NewDeadLetter positionOnly(NewDeadLetter l, String sqlState) {
    return reduced(
        l,
        Optional.empty(),
        null,
        null,
        List.of(),
        "the dead-letter store refused this record's key, value or headers (SQLSTATE "
            + sqlState
            + "); only its position is kept: read it again from its topic while it is retained",
        "");
  }

  /** {@code l} with these parts replaced; its fingerprint escaped to printable ASCII. */
  private static NewDeadLetter reduced(
      NewDeadLetter l,
      Optional<String> type,
      byte[] key,
      byte[] value,
      List<Header> headers,
      String errorMessage,
      String stackTrace) {
    return new NewDeadLetter(
        l.consumer(),
        l.topic(),
        l.partition(),
        l.offset(),
        l.messageId(),
        type,
        key,
        value,
        headers,
        l.classification(),
        l.errorClass(),
        errorMessage,
        stackTrace,
        StoredText.ascii(l.fingerprint()),
        l.attempts(),
        l.firstFailure(),
        l.lastFailure());
  }
}
