package dev.postbox.admin;

import java.time.Instant;
import java.util.Optional;

/**
 * A parked key of a consumer: its head (the message that keeps failing) and how many wait behind.
 *
 * @param messages parked messages of the key, the head included
 * @param headTopic where the head was read
 * @param attempts the head's failed parked retries
 * @param dueAt when the head is retried next
 * @param due the head is due now (its time has come, or an operator released the key): the consumer
 *     retries it at its next poll
 * @param blocked the head's predecessor was dead-lettered and the key waits for an operator
 *     (release or skip)
 * @param leased a consumer is retrying it right now
 * @param lastError the head's last error
 * @param parkedAt when the oldest message was parked
 */
public record ParkedKey(
    String consumer,
    String key,
    long messages,
    String headTopic,
    int headPartition,
    long headOffset,
    int attempts,
    Instant dueAt,
    boolean due,
    boolean blocked,
    boolean leased,
    Optional<String> lastError,
    Instant parkedAt) {}
