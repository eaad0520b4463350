package dev.postbox.jdbc.archfixture;

import dev.postbox.core.internal.RelayEngine;

/**
 * Breaks "internal stays in its module" on purpose: core.internal outside the declared engine
 * contract.
 */
public final class JdbcUsingCoreInternals {
  private JdbcUsingCoreInternals() {}

  public static Object engine(RelayEngine engine) {
    return engine;
  }
}
