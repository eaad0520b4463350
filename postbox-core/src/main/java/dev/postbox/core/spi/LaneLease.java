package dev.postbox.core.spi;

/**
 * Ownership of one relay lane: the lane number and the epoch under which it was acquired. The epoch
 * grows by one at every acquisition; a store checks it on every claim and mark (fencing), so an
 * instance whose lease was taken over can no longer change the outbox.
 */
public record LaneLease(int lane, long epoch) {}
