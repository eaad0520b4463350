package dev.postbox.spring;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.consumer.FailureHandlers;
import dev.postbox.core.consumer.RetryPolicy;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.jdbc.PostgresConsumerAgeStore;
import dev.postbox.jdbc.PostgresDeadLetterStore;
import dev.postbox.jdbc.PostgresInboxStore;
import dev.postbox.jdbc.PostgresParkingStore;
import dev.postbox.jdbc.PostgresShardLeaseStore;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.sql.DataSource;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the application's consumers ({@link PostboxListener} methods and {@link PostboxConsumer}
 * beans) as subscribers of the transport ({@code postbox.transport}: Kafka or RabbitMQ) that start
 * and stop with the Spring context: a listener's subscription comes from the delivery table;
 * effectively-once gets the PostgreSQL inbox, whose transaction of each message is a transaction of
 * the application's transaction manager ({@link SpringTransactionRunner}: the handler's writes
 * through Spring commit with the dedupe record), and dead letters and parking the PostgreSQL stores
 * when the table asks for them. Stopping closes each subscriber gracefully (running records finish,
 * the finished prefix is committed).
 */
public final class PostboxConsumers implements SmartLifecycle {

  private final PostboxProperties properties;
  private final DataSource dataSource;
  private final PostboxListenerRegistrar registrar;
  private final List<PostboxConsumer> beans;
  private final Optional<IdempotencyStore> idempotencyStore;
  private final PostboxMetrics metrics;
  private final Optional<io.opentelemetry.api.OpenTelemetry> openTelemetry;
  private final TransportWiring transport;
  private final SpringTransactionRunner transactions;
  private final PostboxObservations observations;
  private final Map<String, Running> running = new LinkedHashMap<>();

  PostboxConsumers(
      TransportWiring transport,
      PostboxProperties properties,
      DataSource dataSource,
      PostboxListenerRegistrar registrar,
      List<PostboxConsumer> beans,
      Optional<IdempotencyStore> idempotencyStore,
      PostboxMetrics metrics,
      Optional<io.opentelemetry.api.OpenTelemetry> openTelemetry,
      SpringTransactionRunner transactions,
      PostboxObservations observations) {
    this.transport = transport;
    this.observations = observations;
    this.transactions = transactions;
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
              fromTable(group(e.id()), e.topic(), properties.topic(e.topic())), e.handler()));
    }
    consumers.replaceAll(c ->
        new PostboxConsumer(c.subscription(), observations.handler(c.subscription(), c.handler())));
    if (!consumers.isEmpty() && properties.brokerAddress().isBlank()) {
      throw new PostboxConfigurationException(
          List.of(
              properties.brokerAddressKey() + " is required by the consumers " + names(consumers)));
    }
    List<String> problems = new ArrayList<>(startUpProblems(consumers));
    if (!problems.isEmpty()) {
      throw new PostboxConfigurationException(problems);
    }
    // a problem of the table only the broker reveals (Kafka: a topic's retention.ms against the
    // inbox retention or idempotency TTL) is collected over all consumers and reported in one
    // message, as the table's other problems are
    try {
      for (PostboxConsumer c : consumers) {
        TransportWiring.Consumer consumer =
            transport.consumer(
                c, startsAtEnd(c.subscription()), stores(c.subscription()), metrics, openTelemetry);
        Optional<String> problem = consumer.start();
        if (problem.isPresent()) {
          problems.add(problem.get());
          continue;
        }
        running.put(c.subscription().name(), new Running(c.subscription(), consumer));
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

  /**
   * What is wrong before any consumer starts: two consumers of one name (one consumer group), a
   * pool too small for the effectively-once listeners; and the transaction manager must manage the
   * inbox's DataSource (else throws).
   */
  private List<String> startUpProblems(List<PostboxConsumer> consumers) {
    List<String> problems = new ArrayList<>();
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (PostboxConsumer c : consumers) {
      if (!seen.add(c.subscription().name())) {
        problems.add(
            "two consumers are named '"
                + c.subscription().name()
                + "' (one consumer group and inbox name): give each listener its own id");
      }
    }
    List<Subscription> subscriptions =
        consumers.stream().map(PostboxConsumer::subscription).toList();
    if (subscriptions.stream().anyMatch(s -> s.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE)) {
      transactions.requireSharedDataSource();
    }
    PoolCheck.problem(dataSource, subscriptions, properties).ifPresent(problems::add);
    return problems;
  }

  /**
   * Whether {@code s}, if its group is new, starts at the end of its topics: with {@code
   * postbox.consumers.start-from: latest} (the default), unless its inbox has records under its
   * name (a group whose offsets are gone, read again from the beginning: the inbox drops what it
   * applied).
   */
  private boolean startsAtEnd(Subscription s) {
    if (properties.getConsumers().getStartFrom() != PostboxProperties.Consumers.StartFrom.LATEST) {
      return false;
    }
    if (s.guarantee() != DeliveryGuarantee.EFFECTIVELY_ONCE) {
      return true;
    }
    Boolean known =
        new org.springframework.jdbc.core.JdbcTemplate(dataSource)
            .queryForObject(
                "SELECT EXISTS (SELECT 1 FROM postbox_inbox WHERE consumer = ?)",
                Boolean.class,
                s.name());
    return !Boolean.TRUE.equals(known);
  }

  /** The PostgreSQL stores {@code s} gets from the table (and the application's beans). */
  private TransportWiring.Stores stores(Subscription s) {
    TopicProperties row = properties.topic(s.topics().get(0));
    Optional<InboxStore> inbox =
        s.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE
            ? Optional.of(PostgresInboxStore.create(dataSource, transactions.forConsumer(s.name())))
            : Optional.empty();
    Optional<IdempotencyStore> idempotency = Optional.empty();
    if (s.guarantee() == DeliveryGuarantee.DEDUPLICATED) {
      idempotency =
          Optional.of(
              idempotencyStore.orElseThrow(() ->
                  new PostboxConfigurationException(
                      List.of(
                          "consumer '"
                              + s.name()
                              + "' is deduplicated and needs an IdempotencyStore bean (for"
                              + " example RedisIdempotencyStore)"))));
    }
    return new TransportWiring.Stores(
        inbox,
        idempotency,
        row.isDeadLetters()
            ? Optional.of(PostgresDeadLetterStore.create(dataSource))
            : Optional.empty(),
        row.isParking() ? Optional.of(PostgresParkingStore.create(dataSource)) : Optional.empty(),
        properties.getTransport() == PostboxProperties.Transport.RABBITMQ
                && properties.getRabbitmq().isShardLeases()
            ? Optional.of(PostgresShardLeaseStore.create(dataSource))
            : Optional.empty(),
        properties.getTransport() == PostboxProperties.Transport.RABBITMQ
                && properties.getRabbitmq().isAgeReports()
            ? Optional.of(PostgresConsumerAgeStore.create(dataSource))
            : Optional.empty());
  }

  /**
   * The consumer group (and inbox name) of listener {@code id}: its id unless the table names one.
   */
  private String group(String id) {
    PostboxProperties.ListenerProperties row = properties.getListeners().get(id);
    return row == null || row.getGroup().isBlank() ? id : row.getGroup();
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
    List<Running> all = new ArrayList<>(running.values());
    running.clear();
    RuntimeException failure = null;
    for (Running r : all.reversed()) {
      try {
        r.consumer().close();
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
  public synchronized Map<String, ConsumerHealth> states() {
    Map<String, ConsumerHealth> out = new LinkedHashMap<>();
    running.forEach((name, r) -> out.put(name, r.consumer().health()));
    return out;
  }

  /** The subscriptions of the running consumers. */
  synchronized List<Subscription> subscriptions() {
    return running.values().stream().map(Running::subscription).toList();
  }

  private record Running(Subscription subscription, TransportWiring.Consumer consumer) {}
}
