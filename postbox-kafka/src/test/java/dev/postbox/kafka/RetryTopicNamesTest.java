package dev.postbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.kafka.RetryTopicNames.Source;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The names of a subscription's retry topics, and which earlier shared ones are drained. */
class RetryTopicNamesTest {

  @Test
  void aSubscriptionsTopicsCarryItsName() {
    assertThat(RetryTopicNames.retryTopic("orders", "billing", 2))
        .isEqualTo("orders.billing.retry.2");
    assertThat(RetryTopicNames.deadLetterTopic("orders", "billing"))
        .isEqualTo("orders.billing.dlt");
    assertThat(RetryTopicNames.retryTopics(List.of("orders", "refunds"), "billing", 2))
        .containsOnly(
            Map.entry("orders.billing.retry.1", new Source("orders", 1, false)),
            Map.entry("orders.billing.retry.2", new Source("orders", 2, false)),
            Map.entry("refunds.billing.retry.1", new Source("refunds", 1, false)),
            Map.entry("refunds.billing.retry.2", new Source("refunds", 2, false)));
  }

  @Test
  void theEarlierSharedTopicsOfTheSubscriptionsTopicsAreFoundWhateverTheirTier() {
    List<String> existing =
        List.of(
            "orders",
            "orders.retry.1",
            "orders.retry.3", // from a time with more tiers: read as the last
            "orders.dlt",
            "orders.retry.x",
            "orders.retry.01",
            "orders-2.retry.1", // another topic
            "orders.shipping.retry.1", // another subscription's own
            "orders.billing.retry.1",
            "refunds.retry.1"); // a topic this subscription does not read
    assertThat(RetryTopicNames.legacyRetryTopics(List.of("orders"), existing, 2, Set.of()))
        .containsOnly(
            Map.entry("orders.retry.1", new Source("orders", 1, true)),
            Map.entry("orders.retry.3", new Source("orders", 2, true)));
  }

  @Test
  void aNameThatIsAlsoTheSubscriptionsOwnIsNeverReadAsAnEarlierOne() {
    // subscription "eu" of topics "orders" and "orders.eu": orders.eu.retry.1 is its own
    Map<String, Source> own = RetryTopicNames.retryTopics(List.of("orders", "orders.eu"), "eu", 1);
    assertThat(
            RetryTopicNames.legacyRetryTopics(
                List.of("orders", "orders.eu"),
                List.of("orders.eu.retry.1", "orders.retry.1"),
                1,
                own.keySet()))
        .containsOnlyKeys("orders.retry.1");
  }

  @Test
  void aNameKafkaRefusesIsAProblemNamingTheOption() {
    assertThat(RetryTopicNames.problem("billing", List.of("orders"), 3)).isEmpty();
    assertThat(RetryTopicNames.problem("billing/eu", List.of("orders"), 3))
        .hasValueSatisfying(p -> assertThat(p).startsWith("retryTopics").contains("billing/eu"));
    assertThat(RetryTopicNames.problem("billing", List.of("o".repeat(234)), 9))
        .hasValueSatisfying(p -> assertThat(p).contains("(250 characters)"));
  }
}
