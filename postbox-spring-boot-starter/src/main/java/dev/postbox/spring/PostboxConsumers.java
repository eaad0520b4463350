package dev.postbox.spring;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresParkingStore;
import dev.postbox.kafka.IdempotencyTtlTooShortException;
import dev.postbox.kafka.InboxRetentionTooShortException;
import dev.postbox.kafka.KafkaSubscriber;
import dev.postbox.kafka.SubscriberState;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the application's consumers ({@link PostboxListener} methods and {@link PostboxConsumer}
 * beans) as Kafka subscribers that start and stop with the Spring context: a listener's
 * subscription comes from the delivery table; effectively-once gets the PostgreSQL inbox, and dead
 * letters and parking the PostgreSQL stores when the table asks for them. Stopping closes each
 * subscriber gracefully (running records finish, the finished prefix is committed).
 */
public final class PostboxConsumers implements SmartLifecycle {

  private final PostboxProperties properties;
  private final DataSource dataSource;
  private final PostboxListenerRegistrar registrar;
  private final List<PostboxConsumer> beans;
  private final Optional<IdempotencyStore> idempotencyStore;
  private final PostboxMetrics metrics;
  private final Optional<io.opentelemetry.api.OpenTelemetry> openTelemetry;
  private final Map<String, KafkaSubscriber> running = new LinkedHashMap<>();

  PostboxConsumers(
      PostboxProperties properties,
      DataSource dataSource,
      PostboxListenerRegistrar registrar,
      List<PostboxConsumer> beans,
      Optional<IdempotencyStore> idempotencyStore,
      PostboxMetrics metrics,
      Optional<io.opentelemetry.api.OpenTelemetry> openTelemetry) {
    this.properties = properties;
    this.dataSource = dataSource;
    this.registrar = registrar;
    this.beans = List.copyOf(beans);
    this.idempotencyStore = idempotencyStore;
    this.metrics = metrics;
    this.openTelemetry = openTelemetry;
  }

  /** The subscription a listener of {@code topic} named {@code name} gets from the table. */
  static Subscription fromTable(String name, String topic, TopicProperties row) {
    return Subscription.builder(name)
        .topics(topic)
        .guarantee(row.getGuarantee())
        .ordering(row.getOrdering())
        .concurrency(row.getConcurrency())
        .idempotencyTtl(row.getIdempotencyTtl())
        .inboxRetention(row.getInboxRetention())
        .failureHandler(
            FailureHandlers.of(
                RetryPolicy.builder()
                    .maxAttempts(row.getMaxRetries() + 1)
                    .backoff(row.getBackoff().toBackoff())
                    .build()))
        .build();
  }

  @Override
  public synchronized void start() {
    if (!running.isEmpty()) {
      return;
    }
    List<PostboxConsumer> consumers = new ArrayList<>(beans);
    for (PostboxListenerRegistrar.Endpoint e : registrar.endpoints()) {
      consumers.add(
          new PostboxConsumer(
              fromTable(e.name(), e.topic(), properties.topic(e.topic())), e.handler()));
    }
    if (!consumers.isEmpty() && properties.getKafka().getBootstrapServers().isBlank()) {
      throw new PostboxConfigurationException(
          List.of(
              "postbox.kafka.bootstrap-servers is required by the consumers " + names(consumers)));
    }
    // a topic whose retention outlives the table's inbox retention or idempotency TTL is found
    // when its subscriber starts (it reads the topic's retention.ms): every such problem is
    // collected, and reported in one message, as the table's other problems are
    List<String> problems = new ArrayList<>();
    try {
      for (PostboxConsumer c : consumers) {
        KafkaSubscriber subscriber = build(c);
        try {
          subscriber.start();
        } catch (InboxRetentionTooShortException | IdempotencyTtlTooShortException e) {
          problems.add(
              "postbox.topics["
                  + String.join(", ", c.subscription().topics())
                  + "]."
                  + (e instanceof InboxRetentionTooShortException
                      ? "inbox-retention"
                      : "idempotency-ttl")
                  + ": "
                  + e.getMessage());
          continue;
        }
        running.put(c.subscription().name(), subscriber);
      }
    } catch (RuntimeException e) {
      stop();
      throw e;
    }
    if (!problems.isEmpty()) {
      stop();
      throw new PostboxConfigurationException(problems);
    }
  }

  private KafkaSubscriber build(PostboxConsumer c) {
    Subscription s = c.subscription();
    TopicProperties row = properties.topic(s.topics().get(0));
    KafkaSubscriber.Builder b =
        KafkaSubscriber.builder(properties.getKafka().getBootstrapServers(), s)
            .handler(c.handler())
            .metrics(metrics);
    // the application's OpenTelemetry (Spring Boot's, an agent's SDK bean) makes the processing
    // spans; without one the subscriber uses GlobalOpenTelemetry
    openTelemetry.ifPresent(b::openTelemetry);
    if (s.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      InboxStore inbox = PostgresInboxStore.create(dataSource);
      b.inbox(inbox);
    }
    if (s.guarantee() == DeliveryGuarantee.DEDUPLICATED) {
      b.idempotencyStore(
          idempotencyStore.orElseThrow(() ->
              new PostboxConfigurationException(
                  List.of(
                      "consumer '"
                          + s.name()
                          + "' is deduplicated and needs an IdempotencyStore bean (for"
                          + " example RedisIdempotencyStore)"))));
    }
    if (row.isDeadLetters()) {
      b.deadLetters(PostgresDeadLetterStore.create(dataSource));
    }
    if (row.isParking()) {
      b.parking(PostgresParkingStore.create(dataSource));
    }
    return b.build();
  }

  private static String names(List<PostboxConsumer> consumers) {
    return consumers.stream().map(c -> c.subscription().name()).toList().toString();
  }

  /**
   * Stops once the web server's graceful shutdown began ({@code DEFAULT_PHASE - 1024}) and before
   * the relay ({@link PostboxRelayLifecycle#getPhase()}).
   */
  @Override
  public int getPhase() {
    return SmartLifecycle.DEFAULT_PHASE - 3072;
  }

  @Override
  public synchronized void stop() {
    List<KafkaSubscriber> all = new ArrayList<>(running.values());
    running.clear();
    RuntimeException failure = null;
    for (KafkaSubscriber s : all.reversed()) {
      try {
        s.close();
      } catch (RuntimeException e) {
        failure = failure == null ? e : failure;
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  @Override
  public synchronized boolean isRunning() {
    return !running.isEmpty();
  }

  /** What each running consumer is doing, by subscription name. */
  public synchronized Map<String, SubscriberState> states() {
    Map<String, SubscriberState> out = new LinkedHashMap<>();
    running.forEach((name, s) -> out.put(name, s.state()));
    return out;
  }
}
