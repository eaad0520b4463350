package dev.postbox.verify;

import dev.postbox.core.Backoff;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.redis.RedisIdempotencyStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * The consumer of the redis-window scenario, as its own OS process: {@code DEDUPLICATED} with the
 * Redis store; its effect is an HTTP call to the harness's outside target (no database), carrying
 * the message id and this incarnation. Prints {@code STATS applied=.. duplicates=..
 * leasesExpired=.. leasesLost=..} every 500 ms.
 *
 * <p>Arguments: redis URI, bootstrap servers, topic, group, target URL, incarnation, lease ms.
 */
public final class RedisWindowConsumerMain {

  private RedisWindowConsumerMain() {}

  public static void main(String[] args) throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    URI target = URI.create(args[4]);
    String incarnation = args[5];
    Subscription sub =
        Subscription.builder(args[3])
            .topics(args[2])
            .guarantee(DeliveryGuarantee.DEDUPLICATED)
            .concurrency(8)
            .idempotencyLease(Duration.ofMillis(Long.parseLong(args[6])))
            .shutdownTimeout(Duration.ofSeconds(5))
            .failureHandler(
                FailureHandlers.of(
                    RetryPolicy.builder()
                        .maxAttempts(1_000)
                        .maxDuration(Duration.ofHours(1))
                        .backoff(new Backoff(Duration.ofMillis(50), Duration.ofSeconds(1), 2, 0.2))
                        .build()))
            .build();
    try (RedisIdempotencyStore store = RedisIdempotencyStore.builder(args[0]).build();
        KafkaSubscriber s =
            KafkaSubscriber.builder(args[1], sub)
                .idempotencyStore(store)
                .consumerProperty("session.timeout.ms", 6000)
                .handler(d -> {
                  HttpResponse<String> r =
                      http.send(
                          HttpRequest.newBuilder(target)
                              .header("X-Message-Id", d.message().id().toString())
                              .header("X-Incarnation", incarnation)
                              .POST(HttpRequest.BodyPublishers.noBody())
                              .build(),
                          HttpResponse.BodyHandlers.ofString());
                  if (r.statusCode() != 200) {
                    throw new java.io.IOException("target answered " + r.statusCode());
                  }
                  d.recordResult(r.body());
                })
                .build()) {
      Runtime.getRuntime().addShutdownHook(new Thread(s::close));
      s.start();
      System.out.println("consumer started");
      while (true) {
        var st = s.stats();
        System.out.printf(
            "STATS applied=%d duplicates=%d leasesExpired=%d leasesLost=%d%n",
            st.applied(), st.duplicatesSuppressed(), st.leasesExpired(), st.leasesLost());
        System.out.flush();
        Thread.sleep(500);
      }
    }
  }
}
