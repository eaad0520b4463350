package dev.postbox.admin;

import dev.postbox.jdbc.MessageTrace;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Everything about one dead letter: the summary, the record's headers and payload as read, the
 * stack trace, the attempt history of its message for its consumer, the operator actions on it, and
 * its message's trace through every Postbox table.
 *
 * @param headers the record headers in order (duplicates kept)
 * @param payload the record value, byte-identical (empty for a tombstone)
 * @param payloadText the value as UTF-8 text, when it is valid UTF-8
 * @param contentType the content type header, if any
 * @param stackTrace the stack trace of the last failure
 * @param history every letter of this message for this consumer (this one included), oldest first
 * @param audit the operator actions on this letter or its message, newest first
 * @param trace the message's trace (empty when the letter has no message id)
 */
public record DeadLetterDetail(
    DeadLetterSummary summary,
    List<Header> headers,
    byte[] payload,
    Optional<String> payloadText,
    Optional<String> contentType,
    Optional<String> stackTrace,
    List<Attempt> history,
    List<AuditEntry> audit,
    Optional<MessageTrace> trace) {

  public DeadLetterDetail {
    headers = List.copyOf(headers);
    payload = payload.clone();
    history = List.copyOf(history);
    audit = List.copyOf(audit);
  }

  @Override
  public byte[] payload() {
    return payload.clone();
  }

  /**
   * One header: its name and its value as UTF-8 text when valid, else base64 ({@code base64} true);
   * a null value is empty text.
   */
  public record Header(String name, String value, boolean base64) {}

  /**
   * One letter of the message: when it failed, how often, and what became of it.
   *
   * @param resolvedAt when it was replayed or discarded
   * @param resolvedBy who did it
   * @param reason the discard reason
   */
  public record Attempt(
      long deadLetterId,
      int attempts,
      Instant firstFailure,
      Instant lastFailure,
      String errorClass,
      Optional<String> errorMessage,
      dev.postbox.core.spi.DeadLetterStore.Status status,
      Optional<Instant> resolvedAt,
      Optional<String> resolvedBy,
      Optional<String> reason) {}
}
