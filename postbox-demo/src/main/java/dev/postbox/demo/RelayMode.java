package dev.postbox.demo;

import dev.postbox.jdbc.Outbox;
import java.util.Locale;

/**
 * Which relay publishes the shop's outbox, and where the orders service writes its events: the
 * polling relay on outbox rows (the default), or the CDC relay ({@link
 * dev.postbox.jdbc.cdc.CdcRelay}) on outbox rows or on WAL-only logical messages ({@link
 * EmitOrderOutbox}). The report's {@code relay} and {@code outbox} are {@link #relay()} and {@link
 * #outbox()}.
 */
enum RelayMode {
  POLLING_TABLE("polling", "table"),
  CDC_TABLE("cdc", "table"),
  CDC_EMIT("cdc", "emit");

  private final String relay;
  private final String outbox;

  RelayMode(String relay, String outbox) {
    this.relay = relay;
    this.outbox = outbox;
  }

  /** {@code polling} or {@code cdc}. */
  String relay() {
    return relay;
  }

  /** {@code table} (outbox rows) or {@code emit} (pg_logical_emit_message, CDC only). */
  String outbox() {
    return outbox;
  }

  boolean cdc() {
    return this != POLLING_TABLE;
  }

  /** The outbox the orders service writes its {@code order.created} through. */
  Outbox ordersOutbox() {
    return this == CDC_EMIT ? new EmitOrderOutbox() : Outbox.postgres();
  }

  /**
   * The mode of {@code relay} ({@code polling}, {@code cdc}) and {@code outbox} ({@code table},
   * {@code emit}).
   */
  static RelayMode of(String relay, String outbox) {
    for (RelayMode m : values()) {
      if (m.relay.equalsIgnoreCase(relay) && m.outbox.equalsIgnoreCase(outbox)) {
        return m;
      }
    }
    String r = relay.toLowerCase(Locale.ROOT);
    if (!r.equals("polling") && !r.equals("cdc")) {
      throw new IllegalArgumentException("unknown relay '" + relay + "' (polling or cdc)");
    }
    if (r.equals("polling") && outbox.equalsIgnoreCase("emit")) {
      throw new IllegalArgumentException(
          "--outbox emit writes no table row: only the CDC relay reads it (use --relay cdc)");
    }
    throw new IllegalArgumentException("unknown outbox '" + outbox + "' (table or emit)");
  }
}
