package dev.postbox.admin;

import java.time.Instant;
import java.util.Optional;
import java.util.UUID;

/**
 * An outbox row the relay gave up on.
 *
 * @param hold KEY or TOPIC while it holds the later rows (then {@code ./postbox outbox unblock}
 *     retries or skips it); empty when it holds nothing (skipped, or failed without a hold)
 */
public record FailedOutboxRow(
    long position,
    UUID messageId,
    String topic,
    Optional<String> key,
    String type,
    Instant failedAt,
    int attempts,
    Optional<String> error,
    Optional<String> hold) {}
