package dev.postbox.kafka;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A consume-transform-produce instance in its own JVM: args = bootstrap, input topic, output topic,
 * group, transactional id.
 */
public final class TransformerChildMain {
  public static void main(String[] args) throws Exception {
    try (KafkaTransformer t =
        TransformerIT.builder(args[0], args[1], args[2], args[3], args[4], new AtomicInteger(-1))
            // a dead member is noticed after 6 s, and the successor's join waits at most 10 s
            .consumerProperty("session.timeout.ms", 6000)
            .consumerProperty("max.poll.interval.ms", 10_000)
            .build()) {
      t.start();
      System.out.println("transformer started");
      Thread.sleep(Duration.ofMinutes(5));
    }
  }
}
