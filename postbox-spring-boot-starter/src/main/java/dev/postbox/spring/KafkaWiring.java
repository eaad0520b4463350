package dev.postbox.spring;

import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.RelayPublisher;
import dev.postbox.kafka.ConsumerLagProbe;
import dev.postbox.kafka.IdempotencyTtlTooShortException;
import dev.postbox.kafka.InboxRetentionTooShortException;
import dev.postbox.kafka.KafkaAtMostOncePublisher;
import dev.postbox.kafka.KafkaRelayPublisher;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.kafka.SubscriberState;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The Kafka transport ({@code postbox.transport: kafka}, the default): {@link KafkaRelayPublisher},
 * {@link KafkaSubscriber}, {@link KafkaAtMostOncePublisher} and the groups' lag from {@link
 * ConsumerLagProbe}, all on {@code postbox.kafka.bootstrap-servers}.
 */
final class KafkaWiring implements TransportWiring {

  private final PostboxProperties properties;
  private Optional<ConsumerLagProbe> lag = Optional.empty(); // guarded by this
  private List<String> lagGroups = List.of(); // guarded by this

  KafkaWiring(PostboxProperties properties) {
    this.properties = properties;
  }

  private String bootstrap() {
    return properties.getKafka().getBootstrapServers();
  }

  @Override
  public RelayPublisher relayPublisher() {
    return KafkaRelayPublisher.builder(bootstrap()).build();
  }

  @Override
  public Consumer consumer(
      PostboxConsumer c,
      boolean newAtEnd,
      Stores stores,
      PostboxMetrics metrics,
      Optional<io.opentelemetry.api.OpenTelemetry> openTelemetry) {
    Subscription s = c.subscription();
    KafkaSubscriber.Builder b =
        KafkaSubscriber.builder(bootstrap(), s).handler(c.handler()).metrics(metrics);
    openTelemetry.ifPresent(b::openTelemetry);
    stores.inbox().ifPresent(b::inbox);
    stores.idempotency().ifPresent(b::idempotencyStore);
    stores.deadLetters().ifPresent(b::deadLetters);
    stores.parking().ifPresent(b::parking);
    KafkaSubscriber subscriber = b.build();
    return new Consumer() {
      @Override
      public Optional<String> start() {
        // a topic whose retention outlives the table's inbox retention or idempotency TTL is
        // found when its subscriber starts (it reads the topic's retention.ms)
        Optional<String> missing =
            KafkaGroupStart.prepare(
                Map.of("bootstrap.servers", bootstrap()), s.name(), s.topics(), newAtEnd);
        if (missing.isPresent()) {
          return missing;
        }
        try {
          subscriber.start();
          return Optional.empty();
        } catch (InboxRetentionTooShortException | IdempotencyTtlTooShortException e) {
          return Optional.of(
              "postbox.topics["
                  + String.join(", ", s.topics())
                  + "]."
                  + (e instanceof InboxRetentionTooShortException
                      ? "inbox-retention"
                      : "idempotency-ttl")
                  + ": "
                  + e.getMessage());
        }
      }

      @Override
      public ConsumerHealth health() {
        SubscriberState state = subscriber.state();
        Map<String, Object> detail = new LinkedHashMap<>();
        detail.put("pollLoopAlive", state.alive());
        detail.put("partitions", state.assignment().size());
        detail.put("inFlight", state.inFlight());
        detail.put("fenced", state.fenced());
        detail.put("failure", state.failure().map(Throwable::toString).orElse("none"));
        return new ConsumerHealth(state.healthy(), detail);
      }

      @Override
      public void close() {
        subscriber.close();
      }
    };
  }

  @Override
  public PostboxPublisher.DirectSender directSender() {
    if (bootstrap().isBlank()) {
      throw new IllegalStateException(
          "postbox.kafka.bootstrap-servers is required to send at-most-once topics");
    }
    KafkaAtMostOncePublisher p = KafkaAtMostOncePublisher.builder(bootstrap()).build();
    return new PostboxPublisher.DirectSender() {
      @Override
      public void send(dev.postbox.core.Message message) {
        p.send(message);
      }

      @Override
      public long dropped() {
        return p.dropped();
      }

      @Override
      public void close() {
        p.close();
      }
    };
  }

  /** Worst age ({@code lagAge}) and total records behind ({@code offsetLag}) per group. */
  @Override
  public synchronized Map<String, Map<String, Object>> lag(List<Subscription> subscriptions) {
    List<String> groups = subscriptions.stream().map(Subscription::name).toList();
    if (groups.isEmpty() || bootstrap().isBlank()) {
      return Map.of();
    }
    if (!groups.equals(lagGroups)) {
      lag.ifPresent(ConsumerLagProbe::close);
      lag =
          Optional.of(
              ConsumerLagProbe.builder(bootstrap()).groups(groups.toArray(String[]::new)).build());
      lagGroups = groups;
    }
    Map<String, Lag> worst = new LinkedHashMap<>();
    lag.ifPresent(p ->
        p.read()
            .forEach(l ->
                worst.merge(
                    l.group(), new Lag(l.oldestUnprocessedAge(), l.offsetLag()), Lag::worst)));
    Map<String, Map<String, Object>> out = new LinkedHashMap<>();
    for (String g : groups) {
      Lag l = worst.getOrDefault(g, Lag.NONE);
      Map<String, Object> detail = new LinkedHashMap<>();
      detail.put("lagAge", l.age().toString());
      detail.put("offsetLag", l.records());
      out.put(g, detail);
    }
    return out;
  }

  @Override
  public synchronized void close() {
    lag.ifPresent(ConsumerLagProbe::close);
    lag = Optional.empty();
    lagGroups = List.of();
  }

  private record Lag(Duration age, long records) {
    static final Lag NONE = new Lag(Duration.ZERO, 0);

    Lag worst(Lag other) {
      return new Lag(age.compareTo(other.age) >= 0 ? age : other.age, records + other.records);
    }
  }
}
