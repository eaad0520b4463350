package dev.postbox.core.spi;

import dev.postbox.core.PostboxException;

/**
 * The error of a {@link RelayPublisher.PublishOutcome.Failed} outcome when the broker fenced the
 * publisher's identity for the message's lane: another relay owns the lane now (Kafka: a producer
 * with the lane's {@code transactional.id} was initialised after ours). The relay never marks such
 * a row and gives the lane up at once (its lease is released, fenced by epoch, so it is acquired
 * again under a new epoch by whoever owns it next).
 */
public class LaneFencedException extends PostboxException {

  private final int lane;
  private final long epoch;

  /** The lane and the lease epoch under which the publisher was fenced. */
  public LaneFencedException(int lane, long epoch, String message, Throwable cause) {
    super(message, cause);
    this.lane = lane;
    this.epoch = epoch;
  }

  /** The fenced lane. */
  public int lane() {
    return lane;
  }

  /** The epoch of the lease under which the publisher was fenced. */
  public long epoch() {
    return epoch;
  }
}
