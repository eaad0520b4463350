package dev.postbox.core.spi;

import java.time.Duration;
import java.util.Objects;

/**
 * The dedupe record of a consumer whose effect is <em>not</em> in a database transaction Postbox
 * can join (an HTTP call, a search index, an email): an outside store (Redis, say) that keeps, per
 * idempotency key, either a processing lease or the stored result of the completed effect, for a
 * time to live. {@code postbox-redis} implements it.
 *
 * <p>The protocol: {@link #claim} takes a lease before the effect (only one holder at a time: a
 * concurrent duplicate gets {@link InProgress} and must wait or defer, never run the effect in
 * parallel); {@link #complete} stores the result with the TTL after the effect, only while the
 * caller still holds its lease (or nobody does); {@link #release} gives the lease back when the
 * effect failed, so a retry can claim it at once. A later claim of a completed key gets {@link
 * Duplicate} with the stored result.
 *
 * <p><b>The at-risk window.</b> The effect and the completion are two writes to two systems: a
 * crash after the effect and before {@link #complete} leaves a lease that expires, and the next
 * claim runs the effect again. {@link Claimed#previousLeaseExpired()} reports such a claim so it
 * can be counted. Only an effect in the inbox's transaction (or an outside system that honours an
 * idempotency key) closes that window.
 *
 * <p>Implementations must be thread-safe.
 */
public interface IdempotencyStore {

  /**
   * Claims {@code key} for {@code lease} (the longest the effect may take; after it the lease
   * expires and another claim may run the effect). {@code ttl} is how long the memory of the claim
   * is kept, so that a claim after an expired lease can be told apart from a first claim.
   */
  Claim claim(String key, Duration lease, Duration ttl);

  /**
   * Stores {@code result} (possibly empty) for the key of {@code lease}, kept for {@code ttl}, if
   * {@code lease} is still held or the key is free; never overwrites another holder's lease or a
   * stored result.
   */
  Completion complete(Lease lease, byte[] result, Duration ttl);

  /**
   * Gives {@code lease} back (the effect failed): the key is free for the next claim. Returns
   * {@code false}, and does nothing, if the lease is no longer held by its token.
   */
  boolean release(Lease lease);

  /** A held lease: the key and the unique token of its holder. */
  record Lease(String key, String token) {
    public Lease {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(token, "token");
    }
  }

  /** What a {@link #claim} found. */
  sealed interface Claim permits Claimed, Duplicate, InProgress {}

  /**
   * The key was free: the caller holds {@code lease} and runs the effect. {@code
   * previousLeaseExpired} is true when an earlier lease of this key expired without completion or
   * release (its holder crashed or hung: its effect may have happened; this claim may repeat it).
   */
  record Claimed(Lease lease, boolean previousLeaseExpired) implements Claim {
    public Claimed {
      Objects.requireNonNull(lease, "lease");
    }
  }

  /** The key was completed before: the effect is done; {@code result} is what was stored. */
  record Duplicate(byte[] result) implements Claim {
    public Duplicate {
      result = result.clone();
    }

    @Override
    public byte[] result() {
      return result.clone();
    }
  }

  /**
   * Someone else holds the lease (for up to {@code remaining}): wait or defer, never run the effect
   * now.
   */
  record InProgress(Duration remaining) implements Claim {
    public InProgress {
      Objects.requireNonNull(remaining, "remaining");
    }
  }

  /** What a {@link #complete} did. */
  enum Completion {
    /** The lease was held: the result is stored. */
    COMPLETED,
    /**
     * The lease had expired and nobody else held the key: the result is stored (late; a parallel
     * claim could have run the effect meanwhile had one come).
     */
    COMPLETED_AFTER_LEASE_EXPIRED,
    /**
     * Another holder claimed the key after this lease expired (or it was completed): nothing
     * stored. The effect may run (or have run) twice.
     */
    LEASE_LOST
  }
}
