package dev.postbox.spring;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.Ordering;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.util.ClassUtils;

/**
 * Finds the contradictions and out-of-range values in bound {@code postbox.*} settings: every
 * problem, not just the first (the configuration is refused as a whole with all of them).
 */
final class DeliveryTableCheck {

  /** The relay's own limit on a batch ({@code Relay.Builder#batchSize}). */
  private static final int MAX_BATCH_SIZE = 100_000;

  /** AMQP's largest prefetch count ({@code basic.qos} carries it in 16 bits). */
  private static final int MAX_PREFETCH = 65_535;

  private DeliveryTableCheck() {}

  /** Every problem of {@code properties}; empty when it is consistent. */
  static List<String> problems(PostboxProperties properties) {
    List<String> problems = new ArrayList<>();
    for (Map.Entry<String, TopicProperties> e : properties.getTopics().entrySet()) {
      topic(e.getKey(), e.getValue(), problems);
    }
    relay(properties.getRelay(), problems);
    transport(properties, problems);
    return problems;
  }

  /** The adapter of the chosen transport, whose address the relay needs, and its settings. */
  private static void transport(PostboxProperties properties, List<String> problems) {
    PostboxProperties.Transport transport = properties.getTransport();
    String adapter = transport == PostboxProperties.Transport.RABBITMQ ? "rabbitmq" : "kafka";
    String probe =
        transport == PostboxProperties.Transport.RABBITMQ
            ? "dev.postbox.rabbitmq.RabbitSubscriber"
            : "dev.postbox.kafka.KafkaSubscriber";
    if (!ClassUtils.isPresent(probe, DeliveryTableCheck.class.getClassLoader())) {
      problems.add(
          "postbox.transport: "
              + adapter
              + " needs dev.postbox:postbox-"
              + adapter
              + " on the class path (add the dependency)");
    }
    if (properties.getRelay().isEnabled() && properties.brokerAddress().isBlank()) {
      problems.add(
          properties.brokerAddressKey()
              + " is required while the relay runs (or set postbox.relay.enabled: false)");
    }
    if (transport != PostboxProperties.Transport.RABBITMQ) {
      return;
    }
    PostboxProperties.Rabbitmq r = properties.getRabbitmq();
    if (!r.getUri().isBlank() && !amqpUri(r.getUri())) {
      problems.add(
          "postbox.rabbitmq.uri: '"
              + r.getUri()
              + "' is not an AMQP URI (amqp://user:password@host:port/vhost, or amqps://)");
    }
    if (r.getShards() < 1) {
      problems.add("postbox.rabbitmq.shards must be at least 1, was " + r.getShards());
    }
    if (r.getPrefetch() < 1 || r.getPrefetch() > MAX_PREFETCH) {
      problems.add(
          "postbox.rabbitmq.prefetch must be in [1, " + MAX_PREFETCH + "], was " + r.getPrefetch());
    }
    positive("postbox.rabbitmq.confirm-timeout", r.getConfirmTimeout(), problems);
    if (r.getShardLeaseTtl().compareTo(Duration.ofMillis(100)) < 0) {
      problems.add(
          "postbox.rabbitmq.shard-lease-ttl must be at least 100ms, was " + r.getShardLeaseTtl());
    }
  }

  private static boolean amqpUri(String uri) {
    try {
      java.net.URI u = new java.net.URI(uri);
      return ("amqp".equals(u.getScheme()) || "amqps".equals(u.getScheme())) && u.getHost() != null;
    } catch (java.net.URISyntaxException e) {
      return false;
    }
  }

  private static void topic(String topic, TopicProperties t, List<String> problems) {
    String at = "postbox.topics[" + topic + "].";
    boolean atMostOnce = t.getGuarantee() == DeliveryGuarantee.AT_MOST_ONCE;
    if (atMostOnce && t.explicitOutbox().orElse(false)) {
      problems.add(
          at
              + "outbox: true contradicts guarantee at-most-once (at-most-once is sent directly,"
              + " without the outbox; use at-least-once or effectively-once to keep the outbox)");
    }
    if (!atMostOnce && !t.explicitOutbox().orElse(true)) {
      problems.add(
          at
              + "outbox: false contradicts guarantee "
              + dashed(t.getGuarantee())
              + " (without the outbox a crash can lose a message: only at-most-once may skip it)");
    }
    if (atMostOnce && t.isParking()) {
      problems.add(at + "parking: true contradicts guarantee at-most-once (nothing is retried)");
    }
    if (atMostOnce && t.isDeadLetters()) {
      problems.add(at + "dead-letters: true contradicts guarantee at-most-once (nothing is kept)");
    }
    if (t.isParking() && t.getOrdering() == Ordering.UNORDERED) {
      problems.add(
          at
              + "parking: true needs ordering key or partition (it keeps a key's later messages"
              + " behind the parked one), not unordered");
    }
    if (t.getMaxRetries() < 0) {
      problems.add(at + "max-retries must be 0 or more, was " + t.getMaxRetries());
    }
    if (t.getConcurrency() < 1) {
      problems.add(at + "concurrency must be at least 1, was " + t.getConcurrency());
    }
    positive(at + "idempotency-ttl", t.getIdempotencyTtl(), problems);
    positive(at + "inbox-retention", t.getInboxRetention(), problems);
    try {
      t.getBackoff().toBackoff();
    } catch (IllegalArgumentException | NullPointerException e) {
      problems.add(at + "backoff: " + e.getMessage());
    }
  }

  private static void relay(PostboxProperties.RelaySettings r, List<String> problems) {
    if (r.getBatchSize() < 1 || r.getBatchSize() > MAX_BATCH_SIZE) {
      problems.add(
          "postbox.relay.batch-size must be in [1, "
              + MAX_BATCH_SIZE
              + "], was "
              + r.getBatchSize());
    }
    positive("postbox.relay.lease-ttl", r.getLeaseTtl(), problems);
    positive("postbox.relay.poll-interval", r.getPollInterval(), problems);
    positive("postbox.relay.purge-interval", r.getPurgeInterval(), problems);
    positive("postbox.relay.shutdown-timeout", r.getShutdownTimeout(), problems);
    positive("postbox.relay.stuck-threshold", r.getStuckThreshold(), problems);
    if (r.getRetention() == null || r.getRetention().isNegative()) {
      problems.add("postbox.relay.retention must not be negative, was " + r.getRetention());
    }
  }

  private static void positive(String key, Duration d, List<String> problems) {
    if (d == null || d.isNegative() || d.isZero()) {
      problems.add(key + " must be positive, was " + d);
    }
  }

  private static String dashed(Enum<?> value) {
    return value.name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
  }
}
