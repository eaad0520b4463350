package dev.postbox.core.engine;

import dev.postbox.core.PostboxException;

/**
 * A store refused a write for good ({@link StoreErrors.Kind#PERMANENT}): writing the same row again
 * would fail the same way, so {@link StoreRetry} stops instead of retrying forever. Never leaves
 * the engine: the writer keeps what it can (a dead letter of what the store accepts) and counts it.
 */
final class StoreRefused extends PostboxException {
  private static final long serialVersionUID = 1L;

  private final String sqlState;

  StoreRefused(String what, String sqlState, Throwable cause) {
    super(what + " was refused by the store for good (SQLSTATE " + sqlState + ")", cause);
    this.sqlState = sqlState;
  }

  /** The SQLSTATE that made it permanent. */
  String sqlState() {
    return sqlState;
  }
}
