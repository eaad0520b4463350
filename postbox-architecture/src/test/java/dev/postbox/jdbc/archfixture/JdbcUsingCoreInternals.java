package dev.postbox.jdbc.archfixture;

import dev.postbox.core.engine.relay.RelayEngine;

/** Breaks "internal stays in its module" on purpose: the relay engine, which only core may use */
public final class JdbcUsingCoreInternals {
  private JdbcUsingCoreInternals() {}

  public static Object engine(RelayEngine engine) {
    return engine;
  }
}
