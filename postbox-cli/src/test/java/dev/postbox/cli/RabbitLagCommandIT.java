package dev.postbox.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.jdbc.PostgresConsumerAgeStore;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.rabbitmq.RabbitSubscriber;
import dev.postbox.rabbitmq.RabbitTopology;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import dev.postbox.testkit.RabbitMqServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * {@code postbox lag --transport rabbitmq} against a real RabbitMQ node and PostgreSQL: the ready
 * messages and consumers of each shard queue of a subscription, in the text table and the JSON; the
 * age unknown while no subscriber reports it, then, with a subscriber reporting to the database,
 * age 0 and idle on each queue it drained.
 */
@PostboxTest
class RabbitLagCommandIT {

  private record Run(int code, String out, String err) {}

  private static synchronized Run run(String... args) {
    PrintStream out = System.out;
    PrintStream err = System.err;
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    try (PrintStream po = new PrintStream(o, true, StandardCharsets.UTF_8);
        PrintStream pe = new PrintStream(e, true, StandardCharsets.UTF_8)) {
      System.setOut(po);
      System.setErr(pe);
      int code = OperatorCli.commandLine().execute(args);
      return new Run(code, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(out);
      System.setErr(err);
    }
  }

  @Test
  void lagOfARabbitSubscriptionListsEachShardQueueWithItsReadyMessages(PostboxTestContext ctx)
      throws Exception {
    RabbitMqServer server = RabbitMqServer.sharedOrSkip();
    String url = ctx.jdbcUrl();
    assertThat(run("migrate", "--jdbc-url", url).code()).isZero();
    String topic = "lag-" + UUID.randomUUID();
    String sub = "lag-" + UUID.randomUUID().toString().substring(0, 8);
    ConnectionFactory f = new ConnectionFactory();
    f.setUri(server.uri());
    try (Connection c = f.newConnection()) {
      RabbitTopology.declareShards(c.createChannel(), sub, topic, 2);
    }
    List<Message> ms = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      ms.add(Message.builder(topic, "t").key("k" + i).jsonPayload("{}").build());
    }
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(server.uri()).build()) {
      assertThat(p.publish(ms)).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
    }
    String[] args = {
      "lag",
      "--pg-url",
      url,
      "--transport",
      "rabbitmq",
      "--rabbitmq-uri",
      server.uri(),
      "--subscription",
      sub,
      "--topic",
      topic,
      "--shards",
      "2"
    };
    Run text = run(args);
    assertThat(text.code()).as(text.err()).isZero();
    assertThat(text.out()).contains("SUBSCRIPTION", "READY", "CONSUMERS", "STALLED");
    List<String> withJson = new ArrayList<>(List.of(args));
    withJson.add("--json");
    JsonNode json = new ObjectMapper().readTree(run(withJson.toArray(String[]::new)).out());
    JsonNode queues = json.get("queues");
    assertThat(queues).hasSize(2);
    long ready = 0;
    for (JsonNode q : queues) {
      ready += q.get("messages_ready").asLong();
      assertThat(q.get("consumers").asInt()).isZero();
      assertThat(q.get("stalled").asBoolean()).isEqualTo(q.get("messages_ready").asLong() > 0);
      assertThat(q.get("idle").asBoolean()).as("the age is unknown outside").isFalse();
      assertThat(q.has("oldest_unfinished_age")).isTrue();
      assertThat(q.get("oldest_unfinished_age").isNull()).isTrue();
    }
    assertThat(ready).isEqualTo(12);
    assertThat(json.has("consumers")).isTrue();

    // a subscriber elsewhere reports its ages to the database: the command reads them
    try (RabbitSubscriber s =
        RabbitSubscriber.builder(server.uri(), Subscription.builder(sub).topics(topic).build())
            .shards(2)
            .ageStore(PostgresConsumerAgeStore.create(ctx.dataSource()))
            .ageReportInterval(Duration.ofMillis(100))
            .handler(d -> {})
            .build()) {
      s.start();
      await().atMost(Duration.ofSeconds(60)).until(() -> s.stats().applied() == 12);
      await()
          .atMost(Duration.ofSeconds(30))
          .until(() -> {
            JsonNode qs = new ObjectMapper().readTree(run(withJson.toArray(String[]::new)).out());
            for (JsonNode q : qs.get("queues")) {
              if (!q.get("idle").asBoolean()) {
                return false;
              }
            }
            return true;
          });
      JsonNode measured =
          new ObjectMapper().readTree(run(withJson.toArray(String[]::new)).out()).get("queues");
      for (JsonNode q : measured) {
        assertThat(q.get("oldest_unfinished_age").asDouble()).isZero();
        assertThat(q.get("consumers").asInt()).isEqualTo(1);
        assertThat(q.get("stalled").asBoolean()).isFalse();
      }
      Run table = run(args);
      assertThat(table.out()).contains("OLDEST UNFINISHED", "IDLE");
    }
    assertThat(run("lag", "--pg-url", url, "--transport", "rabbitmq").code())
        .as("the subscription and topic are needed")
        .isNotZero();
  }
}
