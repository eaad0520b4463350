package dev.postbox.redis;

import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.redis.internal.LettuceIdempotencyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * An {@link IdempotencyStore} in Redis (standalone server), on Lettuce.
 *
 * <p>Per key, one Redis string {@code <prefix><key>} (default prefix {@value #DEFAULT_PREFIX}):
 *
 * <ul>
 *   <li>a <b>claim</b> is {@code SET <prefix><key> L<token> NX PX <lease>}: only one holder; the
 *       lease expires by itself if its holder dies;
 *   <li>a <b>completion</b> replaces the lease by {@code D<result>} with {@code PX <ttl>}, in a Lua
 *       script that first checks that the value is still this holder's {@code L<token>} (or that
 *       the key is free): a holder whose lease expired never overwrites a newer holder's lease;
 *   <li>a <b>release</b> deletes the key in a Lua script, only if it still holds this token.
 * </ul>
 *
 * <p>Beside it, {@code <prefix><key>#attempt} remembers (for the TTL) that a lease was taken and
 * not yet completed or released, so the next claim can report that the previous lease expired: the
 * at-risk window, counted by the consumer. Both keys are written by one script; the store is tested
 * against a standalone Redis (a Redis Cluster would need both keys in one hash slot).
 *
 * <p>Thread-safe: one multiplexed connection is shared. Close it to close the connection.
 */
public interface RedisIdempotencyStore extends IdempotencyStore, AutoCloseable {

  /** The default key prefix. */
  String DEFAULT_PREFIX = "idempotency:";

  /** The default key prefix of the builder (the same as {@link #DEFAULT_PREFIX}). */
  String DEFAULT_KEY_PREFIX = DEFAULT_PREFIX;

  /** The default longest wait for one Redis command. */
  Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(5);

  /** The default time to live of a completed key: 168 hours (7 days). */
  Duration DEFAULT_TTL = Duration.ofHours(168);

  /**
   * A builder for a store on the Redis server at {@code redisUri} ({@code redis://host:port},
   * {@code rediss://...}, with an optional password and database as Lettuce understands them).
   */
  static Builder builder(String redisUri) {
    return new Builder(redisUri);
  }

  /** The key prefix. */
  String keyPrefix();

  /** Closes the connection. */
  @Override
  void close();

  /** Builds a {@link RedisIdempotencyStore}; validates at {@link #build()}. Not thread-safe. */
  final class Builder {
    private final String redisUri;
    private String keyPrefix = DEFAULT_KEY_PREFIX;
    private Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;

    private Builder(String redisUri) {
      this.redisUri = Objects.requireNonNull(redisUri, "redisUri");
    }

    /** Sets the key prefix (default {@value RedisIdempotencyStore#DEFAULT_PREFIX}). */
    public Builder keyPrefix(String keyPrefix) {
      this.keyPrefix = Objects.requireNonNull(keyPrefix, "keyPrefix");
      return this;
    }

    /** Sets how long one Redis command may take before it fails (default 5 s). */
    public Builder commandTimeout(Duration commandTimeout) {
      this.commandTimeout = Objects.requireNonNull(commandTimeout, "commandTimeout");
      return this;
    }

    /**
     * Validates, connects and loads the scripts.
     *
     * @throws IllegalArgumentException for a bad setting
     * @throws dev.postbox.core.PostboxException if Redis cannot be reached
     */
    public RedisIdempotencyStore build() {
      List<String> problems = new ArrayList<>();
      if (!redisUri.startsWith("redis://")
          && !redisUri.startsWith("rediss://")
          && !redisUri.startsWith("redis-socket://")) {
        problems.add("redisUri must start with redis://, rediss:// or redis-socket://");
      }
      if (keyPrefix.isEmpty()) {
        problems.add("keyPrefix must not be empty");
      }
      if (commandTimeout.isNegative() || commandTimeout.isZero()) {
        problems.add("commandTimeout must be positive");
      }
      if (!problems.isEmpty()) {
        throw new IllegalArgumentException(
            "invalid Redis idempotency store: " + String.join("; ", problems));
      }
      return LettuceIdempotencyStore.connect(redisUri, keyPrefix, commandTimeout);
    }
  }
}
