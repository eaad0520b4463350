package dev.postbox.bench.internal;

import dev.postbox.bench.BenchConfig;
import dev.postbox.bench.Measurement;
import dev.postbox.bench.internal.BenchEnv.Db;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.redis.RedisIdempotencyStore;
import dev.postbox.testkit.RedisServer;
import java.io.PrintStream;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * The Redis-backed consumer ({@code DEDUPLICATED}) against the PostgreSQL-inbox consumer ({@code
 * EFFECTIVELY_ONCE}), same topic, same concurrency, same handler (one INSERT per message: on the
 * inbox transaction for the inbox, on a pooled auto-commit connection for Redis, which has no
 * transaction to join), one after the other in one run.
 */
public final class RedisBench {

  private static final String INSERT_EFFECT = "INSERT INTO bench_effect VALUES (?, ?, ?)";
  private static final AtomicInteger GROUPS = new AtomicInteger();

  private final BenchEnv env;
  private final BenchConfig config;
  private final PrintStream log;

  public RedisBench(BenchEnv env, BenchConfig config, PrintStream log) {
    this.env = env;
    this.config = config;
    this.log = log;
  }

  /**
   * The inbox rate, the Redis rate and their ratio; empty (with one line saying why) when neither a
   * redis-server binary nor {@code POSTBOX_REDIS_URL} is available.
   */
  public List<Measurement> run() throws InterruptedException {
    Optional<String> url =
        Optional.ofNullable(System.getenv(RedisServer.URL_ENV)).filter(s -> !s.isBlank());
    Optional<Path> binary = RedisServer.findBinary();
    if (url.isEmpty() && binary.isEmpty()) {
      log.println(
          "bench: redis skipped: no redis-server on the PATH and "
              + RedisServer.URL_ENV
              + " is not set");
      return List.of();
    }
    Db db = env.database("redis", 40);
    String topic = env.topic("redis", ConsumerBench.PARTITIONS);
    env.fillTopic(topic, config.consumerEvents());
    int warmup = Math.min(config.consumerEvents(), 20_000);
    try (RedisServer redis = url.isPresent() ? null : RedisServer.startPrivate(binary.get());
        RedisIdempotencyStore store =
            RedisIdempotencyStore.builder(url.orElseGet(() -> redis.uri())).build()) {
      Consumer<KafkaSubscriber.Builder> inbox =
          b ->
              b.inbox(PostgresInboxStore.create(db.dataSource()))
                  .handler(d -> insert(d.connection().orElseThrow(), "inbox", d));
      DataSource ds = db.dataSource();
      Consumer<KafkaSubscriber.Builder> deduplicated =
          b ->
              b.idempotencyStore(store)
                  .handler(d -> {
                    try (Connection c = ds.getConnection()) {
                      insert(c, "redis", d);
                    }
                  });
      run("inbox-warmup", topic, DeliveryGuarantee.EFFECTIVELY_ONCE, warmup, inbox);
      run("redis-warmup", topic, DeliveryGuarantee.DEDUPLICATED, warmup, deduplicated);
      double inboxRate =
          run("inbox", topic, DeliveryGuarantee.EFFECTIVELY_ONCE, config.consumerEvents(), inbox);
      double redisRate =
          run(
              "redis",
              topic,
              DeliveryGuarantee.DEDUPLICATED,
              config.consumerEvents(),
              deduplicated);
      Measurement i =
          Measurement.of("consumer_inbox_same_handler_per_s", inboxRate, "msgs/s")
              .note("EFFECTIVELY_ONCE: inbox record + one INSERT in one transaction per message");
      Measurement r =
          Measurement.of("consumer_redis_dedup_per_s", redisRate, "msgs/s")
              .note(
                  "DEDUPLICATED: Redis claim (SET NX PX) + one INSERT (auto-commit) + Redis"
                      + " completion (Lua) per message");
      Measurement ratio =
          Measurement.of("consumer_redis_vs_inbox", redisRate / inboxRate, "x")
              .note("consumer_redis_dedup_per_s / consumer_inbox_same_handler_per_s");
      return List.of(i, r, ratio);
    }
  }

  private double run(
      String what,
      String topic,
      DeliveryGuarantee guarantee,
      int n,
      Consumer<KafkaSubscriber.Builder> wiring)
      throws InterruptedException {
    Subscription sub =
        Subscription.builder("bench-redis-" + what + "-" + GROUPS.incrementAndGet())
            .topics(topic)
            .concurrency(32)
            .guarantee(guarantee)
            .build();
    KafkaSubscriber.Builder b = KafkaSubscriber.builder(env.bootstrap(), sub);
    wiring.accept(b);
    long t0 = System.nanoTime();
    try (KafkaSubscriber s = b.build()) {
      s.start();
      BenchEnv.awaitCount(
          what,
          () -> s.stats().applied() + s.stats().duplicatesSuppressed(),
          n,
          Duration.ofSeconds(120));
      return Rate.since(t0, n);
    }
  }

  private static void insert(Connection c, String consumer, Delivery d) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(INSERT_EFFECT)) {
      ps.setString(1, consumer);
      ps.setObject(2, d.message().id());
      ps.setString(3, d.message().key().orElse(null));
      ps.executeUpdate();
    }
  }
}
