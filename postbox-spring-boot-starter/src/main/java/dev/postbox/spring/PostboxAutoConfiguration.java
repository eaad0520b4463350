package dev.postbox.spring;

import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.jdbc.OperationsProbe;
import dev.postbox.jdbc.Outbox;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.kafka.ConsumerLagProbe;
import dev.postbox.kafka.KafkaAtMostOncePublisher;
import dev.postbox.micrometer.MicrometerPostboxMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Optional;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.ConfigurableEnvironment;

/**
 * Wires Postbox into a Spring Boot application that has a {@code DataSource}: the checked {@code
 * postbox.*} settings, Postbox's migrations (unless {@code postbox.migrations.enabled=false}), the
 * {@link TransactionalOutbox}, the relay ({@code postbox.relay.enabled}), the consumers, and, when
 * on the class path, Micrometer metrics and an Actuator health indicator.
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
  PostboxPublisher postboxPublisher(PostboxProperties properties, TransactionalOutbox outbox) {
    return new PostboxPublisher(
        outbox,
        properties,
        () -> {
          String bootstrap = properties.getKafka().getBootstrapServers();
          if (bootstrap == null || bootstrap.isBlank()) {
            throw new IllegalStateException(
                "postbox.kafka.bootstrap-servers is required to send at-most-once topics");
          }
          return KafkaAtMostOncePublisher.builder(bootstrap).build();
        });
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
      DataSource dataSource,
      PostboxMetrics metrics,
      PostboxSchema schema) {
    return new PostboxRelayLifecycle(properties, dataSource, metrics);
  }

  @Bean
  PostboxConsumers postboxConsumers(
      PostboxProperties properties,
      DataSource dataSource,
      PostboxListenerRegistrar registrar,
      ObjectProvider<PostboxConsumer> consumers,
      ObjectProvider<IdempotencyStore> idempotencyStore,
      PostboxMetrics metrics,
      ObjectProvider<io.opentelemetry.api.OpenTelemetry> openTelemetry,
      PostboxSchema schema) {
    return new PostboxConsumers(
        properties,
        dataSource,
        registrar,
        consumers.orderedStream().toList(),
        Optional.ofNullable(idempotencyStore.getIfAvailable()),
        metrics,
        Optional.ofNullable(openTelemetry.getIfAvailable()));
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
        PostboxProperties properties,
        ObjectProvider<PostboxRelayLifecycle> relay,
        PostboxConsumers consumers,
        OperationsProbe tables) {
      Optional<String> bootstrap =
          Optional.ofNullable(properties.getKafka().getBootstrapServers())
              .filter(b -> !b.isBlank());
      return new PostboxHealthIndicator(
          Optional.ofNullable(relay.getIfAvailable()),
          consumers,
          tables,
          groups ->
              bootstrap.map(
                  b -> ConsumerLagProbe.builder(b).groups(groups.toArray(String[]::new)).build()));
    }
  }
}
