package com.example.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.postbox.spring.PostboxConfigurationException;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;

/** The shop with a wrong delivery table does not start, and says every problem at once. */
class BadConfigurationTest {

  @Test
  void aBadApplicationYmlStopsStartUpListingEveryProblem() {
    Throwable failure =
        catchThrowable(() ->
            new SpringApplicationBuilder(ShopApplication.class)
                .web(WebApplicationType.NONE)
                .properties(
                    "spring.config.location=classpath:bad-application.yml",
                    "spring.datasource.url=" + TestShop.CTX.jdbcUrl())
                .run()
                .close());

    Throwable root = failure;
    while (!(root instanceof PostboxConfigurationException) && root.getCause() != null) {
      root = root.getCause();
    }
    assertThat(root).isInstanceOf(PostboxConfigurationException.class);
    PostboxConfigurationException e = (PostboxConfigurationException) root;
    assertThat(e.problems())
        .containsExactlyInAnyOrder(
            "postbox.topics[shop.order-created].guarantee: 'exactly-once' is not a valid"
                + " DeliveryGuarantee (one of at-most-once, at-least-once, effectively-once,"
                + " deduplicated)",
            "postbox.topics[shop.order-created].max-retries must be 0 or more, was -1",
            "postbox.topics[shop.metrics].outbox: true contradicts guarantee at-most-once"
                + " (at-most-once is sent directly, without the outbox; use at-least-once or"
                + " effectively-once to keep the outbox)",
            "postbox.relay.lease-tll: unknown key (see the configuration metadata or the README's"
                + " Spring Boot section)",
            "postbox.kafka.bootstrap-servers is required while the relay runs (or set"
                + " postbox.relay.enabled: false)");
    assertThat(e.getMessage()).startsWith("the Postbox configuration (postbox.*) has 5 problems:");
  }
}
