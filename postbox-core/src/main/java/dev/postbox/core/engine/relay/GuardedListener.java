package dev.postbox.core.engine.relay;

import dev.postbox.core.relay.RelayListener;
import dev.postbox.core.spi.OutboxRecord;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The application's {@link RelayListener}, called so that it can never break the relay: an
 * exception it throws is logged and ignored.
 */
final class GuardedListener implements RelayListener {

  private static final Logger log = LoggerFactory.getLogger(RelayEngine.class);

  private final RelayListener listener;

  GuardedListener(RelayListener listener) {
    this.listener = listener;
  }

  @Override
  public void onPublished(List<OutboxRecord> records) {
    guarded(() -> listener.onPublished(records));
  }

  @Override
  public void onPublishFailed(OutboxRecord record, Throwable error, boolean permanent) {
    guarded(() -> listener.onPublishFailed(record, error, permanent));
  }

  @Override
  public void onLanesChanged(Set<Integer> lanes) {
    guarded(() -> listener.onLanesChanged(lanes));
  }

  @Override
  public void onFenced(int acknowledged, int marked) {
    guarded(() -> listener.onFenced(acknowledged, marked));
  }

  private static void guarded(Runnable call) {
    try {
      call.run();
    } catch (RuntimeException e) {
      log.warn("relay listener threw; ignored", e);
    }
  }
}
