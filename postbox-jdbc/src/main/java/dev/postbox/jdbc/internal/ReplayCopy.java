package dev.postbox.jdbc.internal;

import dev.postbox.core.Message;
import dev.postbox.core.ReplayHeaders;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/** The message an operator's replay (or corrected copy) writes: stamped with the replay headers. */
public final class ReplayCopy {

  private ReplayCopy() {}

  /**
   * {@code message} with the {@link ReplayHeaders} of a replay of dead letter {@code deadLetter} by
   * {@code by}, addressed to {@code target} (empty: broadcast, no target); replay headers it
   * carried from an earlier replay are replaced, never accumulated.
   */
  public static Message stamped(
      Message message, long deadLetter, String by, Optional<String> target) {
    Map<String, String> headers = new LinkedHashMap<>(message.headers());
    headers.remove(ReplayHeaders.TARGET);
    headers.put(ReplayHeaders.DEAD_LETTER, Long.toString(deadLetter));
    headers.put(ReplayHeaders.REPLAYED_BY, by);
    target.ifPresent(t -> headers.put(ReplayHeaders.TARGET, t));
    return new Message(
        message.id(),
        message.topic(),
        message.type(),
        message.schemaVersion(),
        message.key(),
        message.occurredAt(),
        message.source(),
        message.correlationId(),
        message.causationId(),
        message.tenant(),
        headers,
        message.payload());
  }
}
