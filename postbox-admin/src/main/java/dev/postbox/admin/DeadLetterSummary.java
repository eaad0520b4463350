package dev.postbox.admin;

import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.Status;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;

/**
 * One dead letter in a list (no payload, headers or stack trace: {@link PostboxAdmin#deadLetter}
 * has them).
 *
 * @param key the record key as UTF-8 text (lossy for keys that are not text)
 */
public record DeadLetterSummary(
    long id,
    String consumer,
    String topic,
    int partition,
    long offset,
    Optional<UUID> messageId,
    Optional<String> type,
    Optional<String> key,
    Optional<String> tenant,
    Classification classification,
    String errorClass,
    Optional<String> errorMessage,
    String fingerprint,
    int attempts,
    Instant firstFailure,
    Instant lastFailure,
    Status status,
    int replays) {}
