package dev.postbox.rabbitmq;

import dev.postbox.core.consumer.Subscription;
import dev.postbox.redis.RedisIdempotencyStore;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;

/**
 * A {@code DEDUPLICATED} RabbitMQ consumer in its own JVM, so that a crash point can halt it
 * mid-stream: args = RabbitMQ URI, Redis URI, JDBC URL (the effect table's schema), topic,
 * subscription name, idempotency lease in ms. Its effects are rows of {@code dedup_effect} with
 * worker {@code child}; the subscription is {@link RabbitDeduplicationIT#subscription}'s.
 */
public final class RabbitDedupConsumerChildMain {
  public static void main(String[] args) throws Exception {
    Subscription sub =
        RabbitDeduplicationIT.subscription(
            args[4], args[3], Duration.ofMillis(Long.parseLong(args[5])));
    try (Connection db = DriverManager.getConnection(args[2]);
        RedisIdempotencyStore store = RedisIdempotencyStore.builder(args[1]).build();
        RabbitSubscriber s =
            RabbitSubscriber.builder(args[0], sub)
                .shards(RabbitDeduplicationIT.SHARDS)
                .idempotencyStore(store)
                .handler(d -> {
                  synchronized (db) {
                    RabbitDeduplicationIT.effect(db, d, "child");
                  }
                })
                .build()) {
      s.start();
      System.out.println("consumer started");
      Thread.sleep(Duration.ofMinutes(5)); // until a crash point halts it, or the test kills it
    }
  }
}
