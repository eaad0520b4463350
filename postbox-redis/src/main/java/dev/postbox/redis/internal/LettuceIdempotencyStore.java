package dev.postbox.redis.internal;

import dev.postbox.redis.RedisIdempotencyStore;
import dev.postbox.redis.RedisStoreException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

/** {@link RedisIdempotencyStore} on one multiplexed Lettuce connection. Thread-safe. */
public final class LettuceIdempotencyStore implements RedisIdempotencyStore {

  /**
   * KEYS[1] the record, KEYS[2] the attempt marker; ARGV[1] token, ARGV[2] lease ms, ARGV[3] ttl
   * ms. Returns {1, previousLeaseExpired} (claimed), {2, remaining ms} (in progress) or {3, result}
   * (done).
   */
  static final String CLAIM =
      """
      if redis.call('SET', KEYS[1], 'L' .. ARGV[1], 'NX', 'PX', ARGV[2]) then
        local expired = redis.call('EXISTS', KEYS[2])
        redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
        return {1, expired}
      end
      local v = redis.call('GET', KEYS[1])
      if string.sub(v, 1, 1) == 'D' then
        return {3, string.sub(v, 2)}
      end
      return {2, redis.call('PTTL', KEYS[1])}
      """;

  /**
   * ARGV[1] token, ARGV[2] result, ARGV[3] ttl ms. Returns 1 (completed under the lease), 2 (the
   * lease had expired, the key was free: completed late) or 0 (someone else's: nothing written).
   */
  static final String COMPLETE =
      """
      local v = redis.call('GET', KEYS[1])
      if v and v ~= ('L' .. ARGV[1]) then
        return 0
      end
      redis.call('SET', KEYS[1], 'D' .. ARGV[2], 'PX', ARGV[3])
      if redis.call('GET', KEYS[2]) == ARGV[1] then
        redis.call('DEL', KEYS[2])
      end
      if v then
        return 1
      end
      return 2
      """;

  /** ARGV[1] token. Returns 1 (released) or 0 (not held by this token: nothing done). */
  static final String RELEASE =
      """
      if redis.call('GET', KEYS[1]) ~= ('L' .. ARGV[1]) then
        return 0
      end
      redis.call('DEL', KEYS[1])
      if redis.call('GET', KEYS[2]) == ARGV[1] then
        redis.call('DEL', KEYS[2])
      end
      return 1
      """;

  private final RedisClient client;
  private final StatefulRedisConnection<byte[], byte[]> connection;
  private final RedisCommands<byte[], byte[]> redis;
  private final String keyPrefix;
  private final String where;
  private final Script claim;
  private final Script complete;
  private final Script release;

  private LettuceIdempotencyStore(
      RedisClient client,
      StatefulRedisConnection<byte[], byte[]> connection,
      String keyPrefix,
      String where) {
    this.client = client;
    this.connection = connection;
    this.redis = connection.sync();
    this.keyPrefix = keyPrefix;
    this.where = where;
    this.claim = new Script(CLAIM);
    this.complete = new Script(COMPLETE);
    this.release = new Script(RELEASE);
  }

  /** Connects and loads the scripts. */
  public static LettuceIdempotencyStore connect(
      String redisUri, String keyPrefix, Duration commandTimeout) {
    RedisURI uri = RedisURI.create(redisUri);
    uri.setTimeout(commandTimeout);
    String where = uri.getHost() + ":" + uri.getPort();
    RedisClient client = RedisClient.create(uri);
    try {
      StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
      LettuceIdempotencyStore store = new LettuceIdempotencyStore(client, c, keyPrefix, where);
      store.claim.load();
      store.complete.load();
      store.release.load();
      return store;
    } catch (RedisException e) {
      client.shutdown();
      throw new RedisStoreException("cannot connect to Redis at " + where + ": " + e, e);
    }
  }

  @Override
  public String keyPrefix() {
    return keyPrefix;
  }

  @Override
  public Claim claim(String key, Duration lease, Duration ttl) {
    String token = UUID.randomUUID().toString();
    List<Object> r =
        claim.run(
            ScriptOutputType.MULTI,
            keys(key),
            bytes(token),
            millis(lease, "lease"),
            millis(ttl, "ttl"));
    long code = (Long) r.get(0);
    if (code == 1) {
      return new Claimed(new Lease(key, token), (Long) r.get(1) == 1L);
    }
    if (code == 3) {
      return new Duplicate((byte[]) r.get(1));
    }
    return new InProgress(Duration.ofMillis(Math.max(0, (Long) r.get(1))));
  }

  @Override
  public Completion complete(Lease lease, byte[] result, Duration ttl) {
    long code =
        complete.run(
            ScriptOutputType.INTEGER,
            keys(lease.key()),
            bytes(lease.token()),
            result,
            millis(ttl, "ttl"));
    return switch ((int) code) {
      case 1 -> Completion.COMPLETED;
      case 2 -> Completion.COMPLETED_AFTER_LEASE_EXPIRED;
      default -> Completion.LEASE_LOST;
    };
  }

  @Override
  public boolean release(Lease lease) {
    long code = release.run(ScriptOutputType.INTEGER, keys(lease.key()), bytes(lease.token()));
    return code == 1;
  }

  @Override
  public void close() {
    connection.close();
    client.shutdown();
  }

  private byte[][] keys(String key) {
    return new byte[][] {bytes(keyPrefix + key), bytes(keyPrefix + key + "#attempt")};
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] millis(Duration d, String what) {
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(what + " must be positive, was " + d);
    }
    return bytes(Long.toString(d.toMillis()));
  }

  /** A script run by its SHA-1, loaded again if the server lost it (a restart). */
  private final class Script {
    private final String source;
    private volatile String sha;

    Script(String source) {
      this.source = source;
    }

    void load() {
      sha = redis.scriptLoad(source);
    }

    <T> T run(ScriptOutputType type, byte[][] keys, byte[]... args) {
      try {
        try {
          return redis.evalsha(sha, type, keys, args);
        } catch (RedisNoScriptException e) {
          load();
          return redis.evalsha(sha, type, keys, args);
        }
      } catch (RedisException e) {
        throw new RedisStoreException("Redis at " + where + " failed: " + e.getMessage(), e);
      }
    }
  }
}
