package dev.postbox.spring;

import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.jdbc.OperationsProbe;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.micrometer.MicrometerPostboxMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Optional;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Wires Postbox into a Spring Boot application that has a {@code DataSource}: the checked {@code
 * postbox.*} settings, Postbox's migrations (unless {@code postbox.migrations.enabled=false}), the
 * {@link TransactionalOutbox}, the transport ({@code postbox.transport}: Kafka, the default, or
 * RabbitMQ), the relay ({@code postbox.relay.enabled}), the consumers, and, when on the class path,
 * Micrometer metrics and an Actuator health indicator. Each transport's wiring is a configuration
 * of its own, conditional on its adapter's classes, so an application with one adapter never loads
 * the other's types.
 */
@AutoConfiguration(
    afterName = "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration")
@ConditionalOnBean(DataSource.class)
public class PostboxAutoConfiguration {

  /** Postbox's tables are ready: migrated at start-up, or left to the application. */
  public record PostboxSchema(int migrationsApplied) {}

  /** The {@code postbox.*} settings, refused with every problem listed if they are inconsistent. */
  @Bean
  @ConditionalOnMissingBean
  static PostboxProperties postboxProperties(ConfigurableEnvironment environment) {
    return PostboxSettingsBinder.bind(environment);
  }

  @Bean
  static PostboxListenerRegistrar postboxListenerRegistrar() {
    return new PostboxListenerRegistrar();
  }

  @Bean
  PostboxSchema postboxSchema(PostboxProperties properties, DataSource dataSource) {
    return new PostboxSchema(
        properties.getMigrations().isEnabled() ? PostboxMigrations.migrate(dataSource) : 0);
  }

  @Bean
  @ConditionalOnMissingBean
  Outbox postboxJdbcOutbox(PostboxProperties properties) {
    return Outbox.builder().keyLocking(properties.getOutbox().isKeyLocking()).build();
  }

  @Bean
  @ConditionalOnMissingBean
  TransactionalOutbox transactionalOutbox(
      PostboxProperties properties, DataSource dataSource, Outbox outbox, PostboxSchema schema) {
    return new TransactionalOutbox(dataSource, outbox, properties);
  }

  /** Outbox or direct at-most-once sending, as the delivery table says for each topic. */
  @Bean
  @ConditionalOnMissingBean
  PostboxPublisher postboxPublisher(
      PostboxProperties properties, TransactionalOutbox outbox, TransportWiring transport) {
    return new PostboxPublisher(outbox, properties, transport::directSender);
  }

  /** {@code postbox.transport: kafka} (the default), with {@code postbox-kafka}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "dev.postbox.kafka.KafkaSubscriber")
  @Conditional(OnKafka.class)
  static class KafkaTransport {
    @Bean
    @ConditionalOnMissingBean
    TransportWiring postboxTransport(PostboxProperties properties) {
      return new KafkaWiring(properties);
    }
  }

  /** {@code postbox.transport: rabbitmq}, with {@code postbox-rabbitmq}. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "dev.postbox.rabbitmq.RabbitSubscriber")
  @Conditional(OnRabbitmq.class)
  static class RabbitmqTransport {
    @Bean
    @ConditionalOnMissingBean
    TransportWiring postboxTransport(
        PostboxProperties properties,
        ObjectProvider<org.springframework.boot.ssl.SslBundles> sslBundles) {
      return new RabbitWiring(properties, Optional.ofNullable(sslBundles.getIfAvailable()));
    }
  }

  /** Matches when {@code postbox.transport} binds to the given transport (or is unset: Kafka). */
  abstract static class OnTransport extends SpringBootCondition {
    private final PostboxProperties.Transport transport;

    OnTransport(PostboxProperties.Transport transport) {
      this.transport = transport;
    }

    @Override
    public ConditionOutcome getMatchOutcome(
        ConditionContext context, AnnotatedTypeMetadata metadata) {
      PostboxProperties.Transport chosen;
      try {
        chosen =
            Binder.get(context.getEnvironment())
                .bind(PostboxProperties.PREFIX + ".transport", PostboxProperties.Transport.class)
                .orElse(PostboxProperties.Transport.KAFKA);
      } catch (RuntimeException e) {
        // not a transport: PostboxSettingsBinder reports it with the other problems
        return ConditionOutcome.noMatch("postbox.transport is not a transport");
      }
      return chosen == transport
          ? ConditionOutcome.match("postbox.transport is " + transport)
          : ConditionOutcome.noMatch("postbox.transport is " + chosen);
    }
  }

  static final class OnKafka extends OnTransport {
    OnKafka() {
      super(PostboxProperties.Transport.KAFKA);
    }
  }

  static final class OnRabbitmq extends OnTransport {
    OnRabbitmq() {
      super(PostboxProperties.Transport.RABBITMQ);
    }
  }

  @Bean
  @ConditionalOnMissingBean
  PostboxMetrics postboxNoopMetrics() {
    return PostboxMetrics.noop();
  }

  @Bean
  @ConditionalOnProperty(
      prefix = "postbox.relay",
      name = "enabled",
      havingValue = "true",
      matchIfMissing = true)
  PostboxRelayLifecycle postboxRelay(
      PostboxProperties properties,
      TransportWiring transport,
      DataSource dataSource,
      PostboxMetrics metrics,
      PostboxSchema schema,
      PostboxObservations observations) {
    return new PostboxRelayLifecycle(properties, transport, dataSource, metrics, observations);
  }

  /** Observations of deliveries and relay batches, when the application has a registry. */
  @Bean
  PostboxObservations postboxObservations(
      PostboxProperties properties,
      ObjectProvider<io.micrometer.observation.ObservationRegistry> registry) {
    return new PostboxObservations(
        Optional.ofNullable(registry.getIfAvailable()), properties.getTransport());
  }

  @Bean
  PostboxConsumers postboxConsumers(
      PostboxProperties properties,
      TransportWiring transport,
      DataSource dataSource,
      PostboxListenerRegistrar registrar,
      ObjectProvider<PostboxConsumer> consumers,
      ObjectProvider<IdempotencyStore> idempotencyStore,
      PostboxMetrics metrics,
      ObjectProvider<io.opentelemetry.api.OpenTelemetry> openTelemetry,
      PostboxSchema schema,
      org.springframework.beans.factory.ListableBeanFactory beanFactory,
      PostboxObservations observations) {
    return new PostboxConsumers(
        transport,
        properties,
        dataSource,
        registrar,
        consumers.orderedStream().toList(),
        Optional.ofNullable(idempotencyStore.getIfAvailable()),
        metrics,
        Optional.ofNullable(openTelemetry.getIfAvailable()),
        new SpringTransactionRunner(
            ListenerTransactionManager.choose(properties, beanFactory, dataSource),
            dataSource,
            new EscapedWrites(
                properties.getConsumers().getEscapedWrites(),
                org.slf4j.LoggerFactory.getLogger(EscapedWrites.class)::warn)),
        observations);
  }

  /** Postbox's meters in the application's Micrometer registry, when both are on the class path. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({MicrometerPostboxMetrics.class, MeterRegistry.class})
  static class MicrometerMetrics {
    @Bean
    @ConditionalOnMissingBean
    PostboxMetrics postboxMetrics(ObjectProvider<MeterRegistry> registry) {
      MeterRegistry r = registry.getIfAvailable();
      return r == null ? PostboxMetrics.noop() : MicrometerPostboxMetrics.of(r);
    }
  }

  /**
   * Reads the Postbox tables (outbox backlog and age, held keys, dead letters, parked messages) for
   * the health details; its gauges go to the application's metrics.
   */
  @Bean
  @ConditionalOnMissingBean
  OperationsProbe postboxOperationsProbe(
      PostboxProperties properties,
      DataSource dataSource,
      PostboxMetrics metrics,
      PostboxSchema schema) {
    return OperationsProbe.builder(dataSource)
        .stuckThreshold(properties.getRelay().getStuckThreshold())
        .build()
        .bindTo(metrics);
  }

  /** The {@code postbox} health indicator, when Spring Boot's health support is present. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(HealthIndicator.class)
  static class HealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "postboxHealthIndicator")
    HealthIndicator postboxHealthIndicator(
        ObjectProvider<PostboxRelayLifecycle> relay,
        PostboxConsumers consumers,
        OperationsProbe tables,
        TransportWiring transport) {
      return new PostboxHealthIndicator(
          Optional.ofNullable(relay.getIfAvailable()), consumers, tables, transport);
    }
  }
}
