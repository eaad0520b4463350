package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.rabbitmq.RabbitSubscriber;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.mock.env.MockEnvironment;

/**
 * {@code postbox.transport}: the settings of the other transport, and those RabbitMQ has no use
 * for, are refused with the table's other problems in one message (no database or broker is
 * reached); the RabbitMQ defaults are the adapter's constants; and only each transport's wiring
 * class names its adapter's types, so an application with one adapter never loads the other's.
 */
class TransportConfigurationTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    DataSource dataSource() {
      return new DriverManagerDataSource("jdbc:postgresql://127.0.0.1:1/never-connected");
    }
  }

  private static PostboxConfigurationException startWith(String yaml) {
    Throwable failure =
        catchThrowable(() ->
            new SpringApplicationBuilder(App.class)
                .web(WebApplicationType.NONE)
                .properties("spring.config.location=classpath:" + yaml)
                .run()
                .close());
    Throwable root = failure;
    while (!(root instanceof PostboxConfigurationException) && root.getCause() != null) {
      root = root.getCause();
    }
    assertThat(root).as("%s", failure).isInstanceOf(PostboxConfigurationException.class);
    return (PostboxConfigurationException) root;
  }

  @Test
  void aRabbitMqApplicationWithKafkaOnlyOrOutOfRangeSettingsIsRefusedListingEveryProblem() {
    PostboxConfigurationException e = startWith("bad-rabbit-postbox.yml");
    assertThat(e.getMessage())
        .contains(
            "postbox.kafka.bootstrap-servers: a Kafka setting, but postbox.transport is rabbitmq")
        .contains("postbox.rabbitmq.uri: 'http://localhost:5672' is not an AMQP URI")
        .contains("postbox.rabbitmq.shards must be at least 1, was 0")
        .contains("postbox.rabbitmq.prefetch must be in [1, 65535], was 70000")
        .contains("postbox.rabbitmq.shard-lease-ttl must be at least 100ms, was PT0.05S");
    assertThat(e.problems()).hasSize(5);
  }

  @Test
  void aKafkaApplicationWithRabbitMqSettingsIsRefused() {
    PostboxConfigurationException e = startWith("bad-kafka-postbox.yml");
    assertThat(e.problems())
        .containsExactlyInAnyOrder(
            "postbox.rabbitmq.uri: a RabbitMQ setting, but postbox.transport is kafka (set"
                + " postbox.transport: rabbitmq, or remove it)",
            "postbox.kafka.bootstrap-servers is required while the relay runs (or set"
                + " postbox.relay.enabled: false)");
  }

  @Test
  void rabbitMqNeedsItsUriWhileTheRelayRunsAndAnUnknownTransportIsNamed() {
    Throwable missing =
        catchThrowable(() ->
            PostboxSettingsBinder.bind(
                new MockEnvironment().withProperty("postbox.transport", "rabbitmq")));
    assertThat(((PostboxConfigurationException) missing).problems())
        .containsExactly(
            "postbox.rabbitmq.uri is required while the relay runs (or set postbox.relay.enabled:"
                + " false)");
    Throwable unknown =
        catchThrowable(() ->
            PostboxSettingsBinder.bind(
                new MockEnvironment()
                    .withProperty("postbox.transport", "activemq")
                    .withProperty("postbox.relay.enabled", "false")));
    assertThat(((PostboxConfigurationException) unknown).problems())
        .containsExactly(
            "postbox.transport: 'activemq' is not a valid Transport (one of kafka, rabbitmq)");
  }

  @Test
  void aConsistentRabbitMqTableIsAcceptedWithTheAdaptersDefaults() {
    PostboxProperties p =
        PostboxSettingsBinder.bind(
            new MockEnvironment()
                .withProperty("postbox.transport", "rabbitmq")
                .withProperty("postbox.rabbitmq.uri", "amqp://guest:guest@localhost:5672/%2F")
                .withProperty("postbox.topics[order.created].guarantee", "effectively-once")
                .withProperty("postbox.topics[order.created].ordering", "partition")
                .withProperty("postbox.topics[order.created].parking", "true")
                .withProperty("postbox.topics[metrics].guarantee", "at-most-once"));
    assertThat(p.getTransport()).isEqualTo(PostboxProperties.Transport.RABBITMQ);
    assertThat(p.getRabbitmq().getShards()).isEqualTo(RabbitSubscriber.DEFAULT_SHARDS);
    assertThat(p.getRabbitmq().getPrefetch()).isEqualTo(RabbitSubscriber.DEFAULT_PREFETCH);
    assertThat(p.getRabbitmq().getConfirmTimeout())
        .isEqualTo(RabbitRelayPublisher.DEFAULT_CONFIRM_TIMEOUT);
    assertThat(p.getRabbitmq().isShardLeases()).isFalse();
    assertThat(p.getRabbitmq().isAgeReports()).isFalse();
    assertThat(p.getRabbitmq().getShardLeaseTtl())
        .isEqualTo(RabbitSubscriber.DEFAULT_SHARD_LEASE_TTL);
  }

  /**
   * Reads the compiled starter classes' constant pools: Kafka's types ({@code dev/postbox/kafka},
   * {@code org/apache/kafka}) appear in {@code KafkaWiring} only, RabbitMQ's ({@code
   * dev/postbox/rabbitmq}, {@code com/rabbitmq}) in {@code RabbitWiring} only.
   */
  @Test
  void onlyEachTransportsWiringNamesItsAdaptersTypes() throws IOException {
    Path classes =
        Path.of(
            PostboxAutoConfiguration.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .getPath());
    List<String> problems = new ArrayList<>();
    List<Path> files;
    try (Stream<Path> walk = Files.walk(classes)) {
      files = walk.filter(f -> f.toString().endsWith(".class")).toList();
    }
    assertThat(files).hasSizeGreaterThan(15);
    for (Path f : files) {
      String name = f.getFileName().toString();
      String bytes = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
      boolean kafka = bytes.contains("dev/postbox/kafka/") || bytes.contains("org/apache/kafka/");
      boolean rabbit = bytes.contains("dev/postbox/rabbitmq/") || bytes.contains("com/rabbitmq/");
      if (kafka && !name.startsWith("KafkaWiring")) {
        problems.add(name + " names a Kafka type");
      }
      if (rabbit && !name.startsWith("RabbitWiring")) {
        problems.add(name + " names a RabbitMQ type");
      }
    }
    assertThat(problems).isEmpty();
  }
}
