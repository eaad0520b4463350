package dev.postbox.core.relay;

import dev.postbox.core.spi.OutboxRecord;
import java.util.List;
import java.util.Set;

/**
 * Callbacks from a {@link Relay}, for metrics and logging. Every method has an empty default.
 * Called on the relay's own threads: implementations must be thread-safe and quick, and should not
 * throw (exceptions are logged and ignored).
 */
public interface RelayListener {

  /** A listener that does nothing. */
  RelayListener NONE = new RelayListener() {};

  /** The broker acknowledged these rows and the relay marked them. */
  default void onPublished(List<OutboxRecord> records) {}

  /** A row could not be published; {@code permanent} rows are marked failed and not retried. */
  default void onPublishFailed(OutboxRecord record, Throwable error, boolean permanent) {}

  /** The set of lanes this instance owns changed. */
  default void onLanesChanged(Set<Integer> lanes) {}

  /**
   * Fewer rows were marked than were acknowledged: the instance lost a lane's lease mid-batch
   * (another instance now owns it and publishes those rows again).
   */
  default void onFenced(int acknowledged, int marked) {}
}
