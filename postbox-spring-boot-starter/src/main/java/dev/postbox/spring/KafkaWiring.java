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
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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

  /** The client properties of every Postbox client (spring.kafka.*, postbox.kafka.properties.*). */
  private Map<String, Object> client() {
    return properties.getKafka().clientProperties();
  }

  /** Every client property, with the bootstrap servers: what the admin look-ups connect with. */
  Map<String, Object> adminConfig() {
    Map<String, Object> config = new LinkedHashMap<>(client());
    config.put("bootstrap.servers", bootstrap());
    return config;
  }

  @Override
  public RelayPublisher relayPublisher() {
    KafkaRelayPublisher.Builder b = KafkaRelayPublisher.builder(bootstrap());
    client().forEach(b::producerProperty);
    return b.build();
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
    client().forEach(b::consumerProperty);
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
            GroupStart.prepare(adminConfig(), s.name(), s.topics(), newAtEnd);
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
    KafkaAtMostOncePublisher.Builder pb = KafkaAtMostOncePublisher.builder(bootstrap());
    client().forEach(pb::producerProperty);
    KafkaAtMostOncePublisher p = pb.build();
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
      lag = Optional.of(lagProbe(groups));
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

  private ConsumerLagProbe lagProbe(List<String> groups) {
    ConsumerLagProbe.Builder b =
        ConsumerLagProbe.builder(bootstrap()).groups(groups.toArray(String[]::new));
    client().forEach(b::clientProperty);
    return b.build();
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

  /**
   * Before a Kafka listener subscribes : its topics must exist, and a new consumer group (no
   * committed offset on any partition of its topics) that is to start at the end ({@code
   * postbox.consumers.start-from: latest}, and no inbox records under its name) gets the topics'
   * end offsets committed, so it reads what is written from now on and never, silently, the whole
   * topic; and nothing written after the application started is skipped while the group joins. A
   * group with any committed offset is left as it is (a partition added later is read from its
   * beginning).
   */
  static final class GroupStart {

    private static final Logger log = LoggerFactory.getLogger(GroupStart.class);
    private static final long TIMEOUT_SECONDS = 30;

    private GroupStart() {}

    /** The problem (a topic that does not exist), or empty once the group is ready to start. */
    static Optional<String> prepare(
        Map<String, Object> clientConfig, String group, List<String> topics, boolean newAtEnd) {
      Map<String, Object> config = new HashMap<>();
      clientConfig.forEach((k, v) -> {
        if (AdminClientConfig.configNames().contains(k)) {
          config.put(k, v);
        }
      });
      try (Admin admin = Admin.create(config)) {
        Map<String, TopicDescription> described;
        try {
          described =
              admin.describeTopics(topics).allTopicNames().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          if (e.getCause() instanceof UnknownTopicOrPartitionException) {
            return Optional.of(missing(admin, group, topics));
          }
          throw e;
        }
        if (newAtEnd) {
          startAtEnd(admin, group, described);
        }
        return Optional.empty();
      } catch (ExecutionException | TimeoutException e) {
        throw new IllegalStateException(
            "cannot look up the topics " + topics + " of consumer '" + group + "'", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted looking up the topics " + topics, e);
      }
    }

    private static String missing(Admin admin, String group, List<String> topics)
        throws ExecutionException, InterruptedException, TimeoutException {
      List<String> absent = new ArrayList<>(topics);
      absent.removeAll(admin.listTopics().names().get(TIMEOUT_SECONDS, TimeUnit.SECONDS));
      return "consumer '"
          + group
          + "': the topic "
          + String.join(", ", absent.isEmpty() ? topics : absent)
          + " does not exist on the broker (create it before the application starts; Postbox does"
          + " not create topics)";
    }

    private static void startAtEnd(
        Admin admin, String group, Map<String, TopicDescription> described)
        throws ExecutionException, InterruptedException, TimeoutException {
      List<TopicPartition> partitions = new ArrayList<>();
      described
          .values()
          .forEach(d ->
              d.partitions()
                  .forEach(p -> partitions.add(new TopicPartition(d.name(), p.partition()))));
      Map<TopicPartition, OffsetAndMetadata> committed =
          admin
              .listConsumerGroupOffsets(group)
              .partitionsToOffsetAndMetadata()
              .get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
      if (partitions.stream().anyMatch(p -> committed.get(p) != null)) {
        return; // not new on these topics
      }
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      partitions.forEach(p -> latest.put(p, OffsetSpec.latest()));
      Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
          admin.listOffsets(latest).all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
      Map<TopicPartition, OffsetAndMetadata> start = new HashMap<>();
      ends.forEach((p, info) -> start.put(p, new OffsetAndMetadata(info.offset())));
      try {
        admin.alterConsumerGroupOffsets(group, start).all().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        log.info(
            "consumer '{}' is a new group: it starts at the end of its topics {}"
                + " (postbox.consumers.start-from: latest)",
            group,
            start);
      } catch (ExecutionException e) {
        // another instance of the group joined meanwhile: it starts where that one does
        log.info("consumer '{}': the group's start is already being set: {}", group, e.getCause());
      }
    }
  }
}
