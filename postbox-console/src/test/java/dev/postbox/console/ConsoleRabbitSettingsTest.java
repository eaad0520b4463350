package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The RabbitMQ settings of the console ({@code postbox.console.rabbitmq.*}) are checked at start,
 * each refusal naming the setting (and never repeating a URI, which may hold a password); the
 * {@code ./postbox console} options map to them. Nothing connects: the probe connects at the first
 * page.
 */
class ConsoleRabbitSettingsTest {

  @Test
  void entriesAreSubscriptionShardsTopicAndTheTopicMayHoldAColon() {
    RabbitSubscriptions s =
        RabbitSubscriptions.parse(List.of("inventory:4:orders", " shipping : 2 : legacy:orders "));
    assertThat(s.entries())
        .containsExactly(
            new RabbitSubscriptions.Entry("inventory", 4, "orders"),
            new RabbitSubscriptions.Entry("shipping", 2, "legacy:orders"));
  }

  @Test
  void aMalformedEntryIsRefusedNamingTheSetting() {
    for (String bad : List.of("inventory", "inventory:orders", ":4:orders", "inventory:4:")) {
      assertThatThrownBy(() -> RabbitSubscriptions.parse(List.of(bad)))
          .as(bad)
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("postbox.console.rabbitmq.subscriptions")
          .hasMessageContaining("subscription:shards:topic");
    }
    for (String bad : List.of("inventory:0:orders", "inventory:257:orders", "inventory:x:orders")) {
      assertThatThrownBy(() -> RabbitSubscriptions.parse(List.of(bad)))
          .as(bad)
          .hasMessageContaining("postbox.console.rabbitmq.subscriptions")
          .hasMessageContaining("between 1 and 256");
    }
  }

  @Test
  void startRefusesAUriWithoutSubscriptionsABadUriAndTimeoutsTheWrongWayRound() {
    ConsoleProperties settings = new ConsoleProperties();
    settings.getRabbitmq().setUri("amqp://ops:s3cret@127.0.0.1:1/%2F");
    assertThatThrownBy(() -> rabbitLag(settings))
        .hasMessageContaining("postbox.console.rabbitmq.subscriptions is empty");

    settings.getRabbitmq().setSubscriptions(List.of("inventory:4:orders"));
    settings.getRabbitmq().setClientTimeout(Duration.ofMillis(500));
    assertThatThrownBy(() -> rabbitLag(settings))
        .hasMessageContaining("postbox.console.rabbitmq.client-timeout")
        .hasMessageContaining("postbox.console.rabbitmq.timeout");

    settings.getRabbitmq().setClientTimeout(Duration.ofSeconds(10));
    settings.getRabbitmq().setStalledAfter(Duration.ZERO);
    assertThatThrownBy(() -> rabbitLag(settings))
        .hasMessageContaining("postbox.console.rabbitmq.stalled-after");

    settings.getRabbitmq().setStalledAfter(Duration.ofSeconds(60));
    settings.getRabbitmq().setUri("http://ops:s3cret@rabbit/");
    assertThatThrownBy(() -> rabbitLag(settings))
        .hasMessageContaining("postbox.console.rabbitmq.uri is not an AMQP URI")
        .hasMessageNotContaining("s3cret");

    settings.getRabbitmq().setUri("amqp://ops:s3cret@127.0.0.1:1/%2F");
    try (RabbitLag lag = rabbitLag(settings)) {
      assertThat(lag).isNotNull(); // valid: built without connecting
    }
  }

  @Test
  void theClientsConnectionTimeoutGoesIntoTheUriUnlessItNamesOne() {
    assertThat(ConsoleApplication.withConnectionTimeout("amqp://h/%2F", Duration.ofSeconds(10)))
        .isEqualTo("amqp://h/%2F?connection_timeout=10000");
    assertThat(
            ConsoleApplication.withConnectionTimeout(
                "amqp://h/%2F?heartbeat=5", Duration.ofSeconds(2)))
        .isEqualTo("amqp://h/%2F?heartbeat=5&connection_timeout=2000");
    assertThat(
            ConsoleApplication.withConnectionTimeout(
                "amqp://h/%2F?connection_timeout=300", Duration.ofSeconds(2)))
        .isEqualTo("amqp://h/%2F?connection_timeout=300");
  }

  @Test
  void theOptionsBecomeTheSettingsWithTheUriFromTheEnvironmentByDefault() {
    ConsoleCommand command =
        new ConsoleCommand(Map.of("POSTBOX_RABBITMQ_URL", "amqp://h/%2F")::get);
    new CommandLine(command)
        .parseArgs("--rabbitmq-subscription", "inventory:4:orders,inventory:4:returns");
    assertThat(command.rabbitmqSubscriptions)
        .containsExactly("inventory:4:orders", "inventory:4:returns");
    assertThat(command.rabbitmqUri).isNull(); // taken from $POSTBOX_RABBITMQ_URL when run
  }

  private static RabbitLag rabbitLag(ConsoleProperties settings) {
    Clock clock = Clock.systemUTC();
    Health health =
        new Health(
            new Dependency("database", Duration.ofSeconds(5), clock),
            Optional.empty(),
            Optional.of(new Dependency("rabbitmq", Duration.ofSeconds(5), clock)));
    // never connected: the ages are read lazily, at a page
    return new ConsoleApplication()
        .rabbitLag(settings, health, new org.postgresql.ds.PGSimpleDataSource());
  }
}
