package dev.postbox.kafka;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.redis.RedisIdempotencyStore;
import java.net.http.HttpClient;
import java.time.Duration;

/**
 * A DEDUPLICATED payment consumer in its own JVM (so a crash point can halt it): args = redis URI,
 * bootstrap, topic, group, payment API URL, with idempotency key (true/false), lease in ms.
 */
public final class RedisConsumerChildMain {
  public static void main(String[] args) throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    boolean withKey = Boolean.parseBoolean(args[5]);
    Subscription sub =
        Subscription.builder(args[3])
            .topics(args[2])
            .guarantee(DeliveryGuarantee.DEDUPLICATED)
            .idempotencyLease(Duration.ofMillis(Long.parseLong(args[6])))
            .build();
    try (RedisIdempotencyStore store = RedisIdempotencyStore.builder(args[0]).build();
        KafkaSubscriber s =
            KafkaSubscriber.builder(args[1], sub)
                .idempotencyStore(store)
                .consumerProperty("session.timeout.ms", 6000)
                .handler(d -> FakePaymentApi.chargeFor(http, args[4], withKey, d))
                .build()) {
      s.start();
      System.out.println("consumer started");
      Thread.sleep(Duration.ofMinutes(5));
    }
  }
}
