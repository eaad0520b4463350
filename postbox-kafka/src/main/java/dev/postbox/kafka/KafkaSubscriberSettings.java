package dev.postbox.kafka;

import dev.postbox.core.consumer.BatchHandler;
import dev.postbox.core.consumer.DuplicateListener;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.OrderedSubscriberBuilder;
import dev.postbox.core.consumer.SubscriberBuilder;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.OffsetStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.time.Ticker;
import dev.postbox.kafka.internal.ClientSettings;
import dev.postbox.kafka.internal.ConsumerSettings;
import dev.postbox.kafka.internal.IncomingRecords;
import io.opentelemetry.api.OpenTelemetry;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.GroupProtocol;

/**
 * What a {@link KafkaSubscriber} is built from, validated: the defaults ({@code DEFAULT_*}, which
 * {@link KafkaSubscriber} republishes under the same names), each setting's own checks, and the
 * checks across settings made at {@code build()}. {@link KafkaSubscriber.Builder} is the public
 * face and delegates here; this record is what the subscriber's parts are made from.
 */
record KafkaSubscriberSettings(
    Subscription subscription,
    Map<String, Object> config,
    MessageHandler handler,
    BatchHandler batchHandler,
    Optional<InboxStore> inbox,
    Optional<OffsetStore> offsetStore,
    Optional<IdempotencyStore> idempotencyStore,
    DuplicateListener onDuplicate,
    boolean forceIdempotencyTtl,
    Optional<DeadLetterStore> deadLetters,
    Optional<ParkingStore> parking,
    List<Duration> parkingTiers,
    boolean blockKeyAfterDeadLetter,
    Optional<List<Duration>> retryTiers,
    Clock clock,
    boolean forceInboxRetention,
    Duration inboxPurgeInterval,
    PostboxMetrics metrics,
    OpenTelemetry openTelemetry,
    Ticker ticker,
    Sleeper sleeper) {

  /** See {@link KafkaSubscriber#DEFAULT_CONSUMER_PROPERTIES}. */
  static final Map<String, Object> DEFAULT_CONSUMER_PROPERTIES =
      Map.of(
          ConsumerConfig.METADATA_MAX_AGE_CONFIG,
          ClientSettings.METADATA_MAX_AGE_MS,
          ConsumerConfig.ISOLATION_LEVEL_CONFIG,
          "read_committed",
          ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
          "earliest",
          ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
          CooperativeStickyAssignor.class.getName());

  static final boolean DEFAULT_FORCE_INBOX_RETENTION = false;
  static final boolean DEFAULT_FORCE_IDEMPOTENCY_TTL = false;
  static final GroupProtocol DEFAULT_GROUP_PROTOCOL = GroupProtocol.CLASSIC;

  /** The engine's processor for these settings: the one place it is constructed. */
  DeliveryProcessor deliveryProcessor(Optional<DeliveryProcessor.RetriesExhausted> retryTopics) {
    return DeliveryProcessor.builder(KafkaBinding.TRANSPORT, subscription)
        .handler(handler)
        .batchHandler(batchHandler)
        .inbox(inbox)
        .offsets(offsetStore)
        .idempotency(
            idempotencyStore.map(s -> new DeliveryProcessor.Idempotency(s, onDuplicate, sleeper)))
        .deadLetters(deadLetters)
        .parking(
            parking.map(p ->
                new DeliveryProcessor.Parking(
                    p, parkingTiers, blockKeyAfterDeadLetter, IncomingRecords::of)))
        .retriesExhausted(retryTopics)
        .time(clock, ticker, sleeper)
        .metrics(metrics)
        .openTelemetry(openTelemetry)
        .build();
  }

  /** Collects the settings one at a time and validates them at {@link #build()}. */
  static final class Builder {
    private final Subscription subscription;
    private final Map<String, Object> config;
    private MessageHandler handler;
    private BatchHandler batchHandler;
    private InboxStore inbox;
    private OffsetStore offsetStore;
    private IdempotencyStore idempotencyStore;
    private DuplicateListener onDuplicate;
    private boolean forceIdempotencyTtl = DEFAULT_FORCE_IDEMPOTENCY_TTL;
    private DeadLetterStore deadLetters;
    private ParkingStore parking;
    private List<Duration> parkingTiers;
    private boolean blockKeyAfterDeadLetter;
    private List<Duration> retryTiers;
    private Clock clock;
    private boolean forceInboxRetention = DEFAULT_FORCE_INBOX_RETENTION;
    private Duration inboxPurgeInterval;
    private PostboxMetrics metrics;
    private OpenTelemetry openTelemetry;
    private Ticker ticker;
    private Sleeper sleeper;
    private Map<String, Object> security = Map.of();

    Builder(String bootstrapServers, Subscription subscription) {
      Objects.requireNonNull(bootstrapServers, "bootstrapServers");
      this.subscription = Objects.requireNonNull(subscription, "subscription");
      this.config = new HashMap<>(ConsumerSettings.defaults(bootstrapServers, subscription.name()));
    }

    /** The settings every subscriber has and those of the ordered ones, as set on the builder. */
    void shared(SubscriberBuilder.Common common, OrderedSubscriberBuilder.Ordered ordered) {
      this.handler = common.handler().orElse(null);
      this.inbox = common.inbox().orElse(null);
      this.inboxPurgeInterval = common.inboxPurgeInterval();
      this.idempotencyStore = common.idempotencyStore().orElse(null);
      this.onDuplicate = common.onDuplicate();
      this.deadLetters = common.deadLetters().orElse(null);
      this.metrics = common.metrics();
      this.openTelemetry = common.openTelemetry().orElse(null);
      this.clock = common.clock();
      this.ticker = common.ticker();
      this.sleeper = common.sleeper();
      this.batchHandler = ordered.batchHandler().orElse(null);
      this.parking = ordered.parking().orElse(null);
      this.parkingTiers = ordered.parkingTiers();
      this.blockKeyAfterDeadLetter = ordered.blockKeyAfterDeadLetter();
    }

    void offsetStore(OffsetStore store) {
      this.offsetStore = Objects.requireNonNull(store, "store");
    }

    void groupProtocol(GroupProtocol protocol) {
      config.put(
          ConsumerConfig.GROUP_PROTOCOL_CONFIG,
          Objects.requireNonNull(protocol, "protocol").name().toLowerCase(Locale.ROOT));
    }

    void forceIdempotencyTtl(boolean force) {
      this.forceIdempotencyTtl = force;
    }

    void retryTopics(Duration... tiers) {
      this.retryTiers = tiers("retry", tiers);
    }

    void forceInboxRetention(boolean force) {
      this.forceInboxRetention = force;
    }

    void consumerProperty(String name, Object value) {
      ConsumerSettings.checkSettable(name);
      config.put(name, Objects.requireNonNull(value, "value"));
    }

    void security(KafkaSecurity security) {
      this.security = Objects.requireNonNull(security, "security").clientProperties();
    }

    private static List<Duration> tiers(String what, Duration... tiers) {
      if (tiers.length == 0) {
        throw new IllegalArgumentException("at least one " + what + " tier is required");
      }
      for (Duration t : tiers) {
        if (t.isNegative()) {
          throw new IllegalArgumentException(what + " tiers must not be negative: " + t);
        }
      }
      return List.of(tiers);
    }

    /** Checks the settings against each other and the subscription. */
    KafkaSubscriberSettings build() {
      String name = "subscription '" + subscription.name() + "'";
      if (subscription.batchSize() > 1 && batchHandler == null) {
        throw new IllegalArgumentException(name + " has batchSize > 1 and needs a batchHandler");
      }
      if (subscription.batchSize() == 1 && handler == null) {
        throw new IllegalArgumentException(name + " needs a handler");
      }
      if (offsetStore != null && inbox != null) {
        throw new IllegalArgumentException(
            name + ": an inbox and an offsetStore are alternatives; choose one");
      }
      if (parking != null && retryTiers != null) {
        throw new IllegalArgumentException(
            name + ": parking and retryTopics are alternatives; choose one");
      }
      if (retryTiers != null) {
        Optional<String> problem =
            RetryTopicNames.problem(subscription.name(), subscription.topics(), retryTiers.size());
        if (problem.isPresent()) {
          throw new IllegalArgumentException(name + ": " + problem.get());
        }
      }
      return new KafkaSubscriberSettings(
          subscription,
          Map.copyOf(dev.postbox.kafka.internal.ClientSettings.withSecurity(config, security)),
          handler,
          batchHandler,
          Optional.ofNullable(inbox),
          Optional.ofNullable(offsetStore),
          Optional.ofNullable(idempotencyStore),
          onDuplicate,
          forceIdempotencyTtl,
          Optional.ofNullable(deadLetters),
          Optional.ofNullable(parking),
          parkingTiers,
          blockKeyAfterDeadLetter,
          Optional.ofNullable(retryTiers),
          clock,
          forceInboxRetention,
          inboxPurgeInterval,
          metrics,
          openTelemetry,
          ticker,
          sleeper);
    }
  }
}
