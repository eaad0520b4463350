package dev.postbox.core.engine;

import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes a store's permanent refusal ({@link StoreRefused}) loud: counted on {@code
 * postbox.consumer.store.refused} every time, and logged at WARN once per store and SQLSTATE (then
 * at DEBUG), so a producer that keeps sending such records cannot flood the log. The log names the
 * SQLSTATE and the record's position, never the database's message, which may quote the row's
 * values. Thread-safe.
 */
final class RefusedWrites {

  // the processor's logger name, which operators configure
  private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

  private final String group;
  private final DeliveryTelemetry telemetry;
  private final Set<String> logged = ConcurrentHashMap.newKeySet();

  RefusedWrites(String group, DeliveryTelemetry telemetry) {
    this.group = group;
    this.telemetry = telemetry;
  }

  /**
   * Counts and reports that {@code store} refused a write for {@code in}; {@code then}: what next.
   */
  void refused(Incoming in, String store, StoreRefused e, String then) {
    telemetry.meters(in).storeRefused.increment();
    String format =
        "{}: the {} refused a write for {} for good (SQLSTATE {}, {}); {}."
            + " Counted in postbox.consumer.store.refused; logged once per store and SQLSTATE";
    Object[] args = {
      group,
      store,
      DeliveryProcessor.position(in),
      e.sqlState(),
      e.getCause() == null ? "?" : e.getCause().getClass().getName(),
      then
    };
    if (logged.add(store + "/" + e.sqlState())) {
      log.warn(format, args);
    } else {
      log.debug(format, args);
    }
  }
}
