package dev.postbox.core.consumer;

/**
 * Counters of one subscription instance since it started.
 *
 * @param received records read from the broker (duplicates included)
 * @param applied messages whose handler completed (for {@code EFFECTIVELY_ONCE}: effects committed)
 * @param duplicatesSuppressed deliveries whose id the inbox had already recorded (nothing applied)
 * @param unknownTypes messages of an unregistered type, ignored
 * @param staleSkipped deliveries whose entity version was not newer than the stored one
 * @param retries in-place retries
 * @param givenUp messages handed to {@link FailureHandler#onGiveUp}
 * @param rejected messages rejected at the boundary (tenant, decoding), included in {@code givenUp}
 * @param abandoned records dropped unfinished because their partition was revoked or the consumer
 *     closed (they are redelivered to the next owner)
 * @param deadLettered given-up records stored in the dead-letter store (0 without one)
 * @param parked messages moved to ordered parking (failing heads and the messages of their keys
 *     behind them)
 * @param unparked parked messages applied later by the delayed retries
 * @param leasesExpired {@code DEDUPLICATED}: claims whose previous lease had expired without
 *     completion (its holder crashed or hung, perhaps after the effect: the at-risk window)
 * @param leasesLost {@code DEDUPLICATED}: completions refused because another holder had claimed
 *     the key after this one's lease expired (the effect may have run twice)
 */
public record ConsumerStats(
    long received,
    long applied,
    long duplicatesSuppressed,
    long unknownTypes,
    long staleSkipped,
    long retries,
    long givenUp,
    long rejected,
    long abandoned,
    long deadLettered,
    long parked,
    long unparked,
    long leasesExpired,
    long leasesLost) {}
