package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * A wrong {@code postbox.*} YAML stops the application at start-up with one message that lists
 * every problem (no database or broker is reached: the settings are checked first).
 */
class BadConfigurationTest {

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {
    @Bean
    DataSource dataSource() {
      return new DriverManagerDataSource("jdbc:postgresql://127.0.0.1:1/never-connected");
    }
  }

  @Test
  void badYamlGivesOneMessageListingEveryProblem() {
    Throwable failure =
        catchThrowable(() ->
            new SpringApplicationBuilder(App.class)
                .web(WebApplicationType.NONE)
                .properties("spring.config.location=classpath:bad-postbox.yml")
                .run()
                .close());

    Throwable root = failure;
    while (!(root instanceof PostboxConfigurationException) && root.getCause() != null) {
      root = root.getCause();
    }
    assertThat(root).isInstanceOf(PostboxConfigurationException.class);
    PostboxConfigurationException e = (PostboxConfigurationException) root;
    assertThat(e.getMessage())
        .startsWith(
            "the Postbox configuration (postbox.*) has " + e.problems().size() + " problems:")
        .contains("postbox.relay.shutdown-timout: unknown key")
        .contains(
            "postbox.topics[payments].guarantee: 'exactly-once' is not a valid DeliveryGuarantee")
        .contains("unknown setting 'created.guarantee' of topic 'order'")
        .contains("postbox.topics[metrics].outbox: true contradicts guarantee at-most-once")
        .contains("postbox.topics[payments].max-retries must be 0 or more, was -1")
        .contains("postbox.topics[stock].parking: true needs ordering key or partition")
        .contains("postbox.relay.batch-size must be in [1, 100000], was 0")
        .contains("postbox.kafka.bootstrap-servers is required");
    assertThat(e.problems()).hasSize(8);
    org.springframework.boot.diagnostics.FailureAnalysis analysis =
        new PostboxConfigurationFailureAnalyzer().analyze(failure);
    assertThat(analysis.getDescription()).isEqualTo(e.getMessage());
    assertThat(analysis.getAction()).contains("postbox.topics[order.created]");
  }

  @Test
  void aConsistentTableIsAccepted() {
    org.springframework.mock.env.MockEnvironment env =
        new org.springframework.mock.env.MockEnvironment()
            .withProperty("postbox.kafka.bootstrap-servers", "localhost:9092")
            .withProperty("postbox.topics[order.created].guarantee", "effectively-once")
            .withProperty("postbox.topics[order.created].max-retries", "4")
            .withProperty("postbox.topics[order.created].backoff.initial", "200ms")
            .withProperty("postbox.topics[metrics].guarantee", "at-most-once");
    PostboxProperties p = PostboxSettingsBinder.bind(env);
    assertThat(p.topic("order.created").getMaxRetries()).isEqualTo(4);
    assertThat(p.topic("order.created").usesOutbox()).isTrue();
    assertThat(p.topic("metrics").usesOutbox()).isFalse();
    assertThat(p.topic("unlisted").getGuarantee())
        .isEqualTo(dev.postbox.core.consumer.Subscription.DEFAULT_GUARANTEE);
    assertThat(p.getRelay().getLeaseTtl())
        .isEqualTo(dev.postbox.core.relay.Relay.DEFAULT_LEASE_TTL);
  }
}
