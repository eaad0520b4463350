package dev.postbox.admin;

import java.time.Instant;
import java.util.Optional;
import java.util.UUID;

/**
 * One operator action from {@code postbox_replay_audit}: who did what, when and why, and what it
 * concerned (the columns of migration V12 are empty for rows written before it).
 *
 * @param action REPLAY, DISCARD, EDIT, RELEASE_PARKED, SKIP_PARKED, RETRY_BLOCKED, SKIP_BLOCKED or
 *     REVEAL_PAYLOAD (a payload shown unmasked, {@link OperatorActions#revealPayload}); the web
 *     console's security events (migration V17): LOGIN_FAILED, LOGIN_THROTTLED, ACCESS_DENIED,
 *     REQUEST_REJECTED
 * @param what a readable description of the subject
 * @param newMessageId the corrected copy's id (EDIT)
 */
public record AuditEntry(
    long id,
    Instant at,
    String actor,
    String action,
    String what,
    int howMany,
    Optional<String> reason,
    Optional<Long> deadLetterId,
    Optional<UUID> messageId,
    Optional<UUID> newMessageId,
    Optional<String> consumer,
    Optional<String> key,
    Optional<Long> outboxPosition) {}
