package dev.postbox.redis.archfixture;

import dev.postbox.jdbc.Outbox;

/**
 * Breaks "adapters never depend on each other" on purpose: the Redis adapter using the JDBC
 * adapter.
 */
public final class RedisUsingJdbc {
  private RedisUsingJdbc() {}

  public static Object outbox(Outbox outbox) {
    return outbox;
  }
}
