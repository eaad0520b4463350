package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.postbox.core.consumer.Delivery;
import dev.postbox.testkit.PostboxTestContext;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.stereotype.Service;

/**
 * The delivery table's inbox retention against the topics' {@code retention.ms}, read from the test
 * kit's real broker when the consumers start: every topic whose messages outlive their dedupe
 * records is one line of the one start-up failure, and nothing is left consuming.
 */
class RetentionTableIT {

  static final PostboxTestContext CTX = PostboxTestContext.create("spring-retention");
  static final String ORDERS = CTX.topic("retention.orders");
  static final String PAYMENTS = CTX.topic("retention.payments");
  static final String STOCK = CTX.topic("retention.stock");

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Listeners.class)
  static class App {
    @Bean(destroyMethod = "")
    DataSource dataSource() {
      return CTX.dataSource();
    }
  }

  @Service
  static class Listeners {
    @PostboxListener(id = "retention-orders", topic = "${test.orders}")
    void orders(Delivery d) {}

    @PostboxListener(id = "retention-payments", topic = "${test.payments}")
    void payments(Delivery d) {}

    @PostboxListener(id = "retention-stock", topic = "${test.stock}")
    void stock(Delivery d) {}
  }

  @Test
  void everyTopicThatOutlivesItsDedupeRecordsIsListedInOneStartUpFailure() {
    Throwable failure =
        catchThrowable(() ->
            new SpringApplicationBuilder(App.class)
                .web(WebApplicationType.NONE)
                .properties(
                    "postbox.kafka.bootstrap-servers=" + CTX.bootstrapServers(),
                    "postbox.relay.enabled=false",
                    "test.orders=" + ORDERS,
                    "test.payments=" + PAYMENTS,
                    "test.stock=" + STOCK,
                    // the broker keeps messages 7 days (log.retention.hours=168)
                    "postbox.topics[" + ORDERS + "].guarantee=effectively-once",
                    "postbox.topics[" + ORDERS + "].concurrency=2",
                    "postbox.topics[" + ORDERS + "].inbox-retention=1d",
                    "postbox.topics[" + PAYMENTS + "].guarantee=effectively-once",
                    "postbox.topics[" + PAYMENTS + "].concurrency=2",
                    "postbox.topics[" + PAYMENTS + "].inbox-retention=2h",
                    "postbox.topics[" + STOCK + "].guarantee=effectively-once",
                    "postbox.topics[" + STOCK + "].concurrency=2",
                    "postbox.topics[" + STOCK + "].inbox-retention=8d")
                .run()
                .close());

    Throwable root = failure;
    while (!(root instanceof PostboxConfigurationException) && root.getCause() != null) {
      root = root.getCause();
    }
    assertThat(root).as("%s", failure).isInstanceOf(PostboxConfigurationException.class);
    PostboxConfigurationException e = (PostboxConfigurationException) root;
    assertThat(e.problems()).hasSize(2);
    assertThat(e.problems().get(0) + e.problems().get(1))
        .contains("postbox.topics[" + ORDERS + "].inbox-retention")
        .contains("postbox.topics[" + PAYMENTS + "].inbox-retention")
        .contains("keeps messages for PT168H")
        .doesNotContain(STOCK);
  }
}
