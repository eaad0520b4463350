package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;

import dev.postbox.core.Message;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.spi.RelayPublisher.PublishOutcome;
import dev.postbox.jdbc.PostgresConsumerAgeStore;
import dev.postbox.rabbitmq.RabbitRelayPublisher;
import dev.postbox.rabbitmq.RabbitSubscriber;
import dev.postbox.testkit.RabbitMqServer;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;

/**
 * The dashboard shows a RabbitMQ subscription's shard queue (messages ready, consumers, the oldest
 * unfinished message's age and the reading idle, working or stalled) when the console is given a
 * RabbitMQ URI and the subscription, with a real node (a private one: the test stops it) and the
 * test kit's PostgreSQL, where a subscriber in this JVM reports its ages ({@code ageStore}) and the
 * console reads them from the database as a process without the subscriber. The messages' publish
 * times are set in the past (the relay publisher's clock), so the ages and the readings do not
 * depend on how fast the machine is. Then the node is stopped: the dashboard still answers, with
 * "RabbitMQ unreachable since", and shows the queue again once the node is back.
 */
@SpringBootTest(classes = ConsoleApplication.class)
@AutoConfigureMockMvc
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleRabbitLagIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-rabbit-lag");
  static final String TOPIC =
      "console.rabbit.orders-" + UUID.randomUUID().toString().substring(0, 8);
  static final String NAME = "inventory-" + UUID.randomUUID().toString().substring(0, 8);

  static RabbitMqServer node;
  static RabbitSubscriber subscriber;
  static final AtomicReference<CountDownLatch> gate = new AtomicReference<>(new CountDownLatch(0));

  /** A node of its own (the test stops it); skipped with one line where there is none. */
  @BeforeAll
  static void startNode() {
    var script = RabbitMqServer.findScript();
    if (script.isEmpty()) {
      // skips with one line (fails under CI), or gives the external broker, which cannot be stopped
      Assumptions.assumeFalse(
          RabbitMqServer.sharedOrSkip().isExternal(), "needs a private RabbitMQ node to stop");
    }
    node = RabbitMqServer.startPrivate(script.orElseThrow());
  }

  @AfterAll
  static void stopAll() {
    gate.get().countDown();
    if (subscriber != null) {
      subscriber.close();
    }
    if (node != null) {
      node.close();
    }
  }

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    DB.register(registry);
    registry.add("postbox.console.rabbitmq.uri", () -> node.uri());
    registry.add("postbox.console.rabbitmq.subscriptions", () -> NAME + ":1:" + TOPIC);
    registry.add("postbox.console.rabbitmq.stalled-after", () -> "PT1H");
    registry.add("postbox.console.retry-unreachable-after", () -> "PT1S");
  }

  @Autowired MockMvc mvc;

  @Test
  @Order(1)
  void theDashboardShowsTheShardQueueWithTheOldestAgeIdleWorkingAndStalled() throws Exception {
    subscriber =
        RabbitSubscriber.builder(node.uri(), Subscription.builder(NAME).topics(TOPIC).build())
            .shards(1)
            .prefetch(2)
            .ageStore(PostgresConsumerAgeStore.create(DB.context().newDataSource(2)))
            .ageReportInterval(Duration.ofMillis(200))
            .handler(d -> {
              if (!gate.get().await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never released");
              }
            })
            .build();
    subscriber.start();
    awaitRow("idle", r -> r.equals(new Row(NAME, TOPIC, "0", "0", "1", "0s", "idle")));

    CountDownLatch first = hang();
    publish(5, Duration.ofMinutes(10)); // prefetch 2: two held by the hung handler, three ready
    Row working = awaitRow("working", r -> r.ready().equals("3") && r.reading().equals("working"));
    assertThat(working.consumers()).isEqualTo("1");
    assertThat(working.age()).as("published 10 minutes ago").matches("1\\d?m \\d+s");

    first.countDown();
    Awaitility.await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> subscriber.stats().applied() == 5);
    awaitRow("idle again", r -> r.ready().equals("0") && r.reading().equals("idle"));

    CountDownLatch second = hang();
    publish(3, Duration.ofHours(2)); // older than stalled-after (1 h): a hung handler holds it
    Row stalled = awaitRow("stalled", r -> r.reading().equals("STALLED"));
    assertThat(stalled.age()).as("published 2 hours ago").startsWith("2h ");
    assertThat(stalled.consumers()).isEqualTo("1");
    second.countDown();
    Awaitility.await()
        .atMost(Duration.ofSeconds(60))
        .until(() -> subscriber.stats().applied() == 8);
    awaitRow("idle at the end", r -> r.ready().equals("0") && r.reading().equals("idle"));
  }

  @Test
  @Order(2)
  void withTheNodeStoppedTheDashboardAnswersWithTheBannerThenShowsTheQueueAgain() throws Exception {
    subscriber.close(); // its reports are removed: the age is unknown from now on
    node.stop();
    Awaitility.await()
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(200))
        .untilAsserted(() -> {
          MvcResult r = dashboard();
          assertThat(r.getResponse().getStatus()).isEqualTo(200);
          String html = r.getResponse().getContentAsString();
          assertThat(html).contains("RabbitMQ unreachable since").contains("id=\"rabbitmq-down\"");
          assertThat(rows(html)).isEmpty();
          assertThat(html).contains("RabbitMQ unreachable: not read.");
        });
    // while the circuit is open, pages answer at once and keep the banner
    MvcResult again = dashboard();
    assertThat(again.getResponse().getStatus()).isEqualTo(200);
    assertThat(again.getResponse().getContentAsString()).contains("RabbitMQ unreachable since");

    node.start();
    Row back = awaitRow("back, no subscriber", r -> r.consumers().equals("0"));
    assertThat(back.age()).as("no instance reports: unknown").isEqualTo("unknown");
    assertThat(dashboard().getResponse().getContentAsString())
        .doesNotContain("RabbitMQ unreachable since");
  }

  record Row(
      String subscription,
      String topic,
      String shard,
      String ready,
      String consumers,
      String age,
      String reading) {}

  private static final Pattern ROW =
      Pattern.compile(
          "<tr class=\"queue\"[^>]*>\\s*"
              + "<td>([^<]*)</td><td>([^<]*)</td>\\s*"
              + "<td class=\"num\">([^<]*)</td><td class=\"num\">([^<]*)</td>\\s*"
              + "<td class=\"num\">([^<]*)</td>\\s*"
              + "<td class=\"age\">([^<]*)</td>\\s*"
              + "<td class=\"state\">([^<]*)</td>");

  static List<Row> rows(String html) {
    List<Row> rows = new ArrayList<>();
    Matcher m = ROW.matcher(html);
    while (m.find()) {
      rows.add(
          new Row(
              m.group(1), m.group(2), m.group(3), m.group(4), m.group(5), m.group(6), m.group(7)));
    }
    return rows;
  }

  /** The dashboard's one queue row once it satisfies {@code until}, as an operator reloading. */
  private Row awaitRow(String what, java.util.function.Predicate<Row> until) {
    AtomicReference<Row> seen = new AtomicReference<>();
    Awaitility.await(what)
        .atMost(Duration.ofSeconds(90))
        .pollInterval(Duration.ofMillis(200))
        .untilAsserted(() -> {
          MvcResult r = dashboard();
          assertThat(r.getResponse().getStatus()).isEqualTo(200);
          List<Row> rows = rows(r.getResponse().getContentAsString());
          assertThat(rows).hasSize(1);
          seen.set(rows.get(0));
          assertThat(until).as("%s: %s", what, rows.get(0)).accepts(rows.get(0));
        });
    return seen.get();
  }

  private MvcResult dashboard() throws Exception {
    return mvc.perform(get("/").with(user("victor").roles("VIEWER"))).andReturn();
  }

  private static CountDownLatch hang() {
    CountDownLatch latch = new CountDownLatch(1);
    gate.set(latch);
    return latch;
  }

  /** {@code n} messages stamped {@code ago} before now (the relay publisher's clock). */
  private static void publish(int n, Duration ago) throws InterruptedException {
    List<Message> ms = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ms.add(Message.builder(TOPIC, "order.created").key("k-" + i).jsonPayload("{}").build());
    }
    Clock past = Clock.fixed(Instant.now().minus(ago), ZoneOffset.UTC);
    try (RabbitRelayPublisher p = RabbitRelayPublisher.builder(node.uri()).clock(past).build()) {
      assertThat(p.publish(ms)).allMatch(o -> o instanceof PublishOutcome.Acknowledged);
    }
  }
}
