package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;

import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.PostgresServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
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
 * The console on a bad day, with real parts: Kafka unreachable (the lag probe pointed at a closed
 * port) and then the database stopped (an embedded PostgreSQL of the test's own, stopped and
 * started again). No page waits for a dependency's timeouts: each answers with what is known and a
 * banner naming what is down, and the log gains a line per change of state, not per request.
 */
@SpringBootTest(classes = ConsoleApplication.class)
@AutoConfigureMockMvc
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleBadDayIT {

  /**
   * No page waits for a dependency's own timeouts (30 s for HikariCP and Kafka's defaults, what the
   * console did before): the console's are 1 s, and the bound leaves a loaded 2-core machine ten
   * times that, so the test checks the mechanism, not the machine's speed. The 2 s target itself is
   * measured on the packaged console (docs/reference/console.md).
   */
  static final Duration PAGE_LIMIT = Duration.ofSeconds(10);

  static final int REQUESTS = 10;

  static PostgresServer pg;
  static String schema;

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) throws IOException {
    pg = PostgresServer.embedded();
    pg.start();
    schema = pg.createSchema("console_bad_day");
    try (var ds = pg.dataSource(schema, 2)) {
      PostboxMigrations.migrate(ds);
      ConsoleFixtures.deadLetter(
          ds, "shipping", ConsoleFixtures.order("orders", "o-1", "{}"), "no warehouse for W-1");
    }
    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    registry.add("postbox.console.db.url", pg::jdbcUrl);
    registry.add("postbox.console.db.schema", () -> schema);
    registry.add("postbox.console.db.connection-timeout", () -> "PT1S");
    registry.add("postbox.console.admin.password", () -> ConsoleTestDatabase.ADMIN_PASSWORD);
    registry.add("postbox.console.kafka.bootstrap-servers", () -> "127.0.0.1:" + closedPort);
    registry.add("postbox.console.kafka.groups", () -> "inventory");
    registry.add("postbox.console.kafka.timeout", () -> "PT0.5S");
    registry.add("postbox.console.retry-unreachable-after", () -> "PT1S");
  }

  @AfterAll
  static void stopDatabase() {
    pg.close();
  }

  @Autowired MockMvc mvc;

  /** The slowest timed page of a test (printed for the record). */
  Duration slowest = Duration.ZERO;

  @org.junit.jupiter.api.AfterEach
  void printSlowest(org.junit.jupiter.api.TestInfo test) {
    System.out.println(test.getDisplayName() + ": slowest page " + slowest.toMillis() + " ms");
  }

  @Test
  @Order(1)
  void withKafkaUnreachableTheDashboardShowsTheDatabasesFiguresAtOnce() throws Exception {
    List<String> log =
        captureLog(() -> {
          // the first page of a fresh application (templates, the pool's first connections) is
          // not timed
          Awaitility.await()
              .atMost(Duration.ofSeconds(60))
              .until(() -> page("/").getResponse().getStatus() == 200);
          for (int i = 0; i < REQUESTS; i++) {
            MvcResult r = timed("/");
            assertThat(r.getResponse().getStatus()).as("dashboard with Kafka down").isEqualTo(200);
            String html = r.getResponse().getContentAsString();
            assertThat(html).contains("Kafka unreachable since");
            assertThat(html).contains("id=\"dead-letters-pending\">1<");
          }
        });
    assertThat(log).as("the log over %d requests", REQUESTS).hasSizeLessThanOrEqualTo(2);
    assertThat(String.join("\n", log)).contains("kafka unreachable since");
  }

  @Test
  @Order(2)
  void withTheDatabaseDownEveryPageAnswersAtOnceWithABannerThenRecovers() throws Exception {
    List<String> pages =
        List.of("/", "/dead-letters", "/held", "/audit", "/trace?id=" + UUID.randomUUID());
    List<String> log =
        captureLog(() -> {
          pg.stop();
          for (int i = 0; i < REQUESTS; i++) {
            for (String page : pages) {
              MvcResult r = timed(page);
              assertThat(r.getResponse().getStatus())
                  .as(page + " with the database down")
                  .isEqualTo(503);
              assertThat(r.getResponse().getContentAsString())
                  .as(page)
                  .contains("Database unreachable since");
            }
          }
        });
    assertThat(log)
        .as("the log over %d requests with the database down", REQUESTS * pages.size())
        .hasSizeLessThanOrEqualTo(2);
    assertThat(String.join("\n", log)).contains("database unreachable since");

    List<String> after =
        captureLog(() -> {
          pg.start();
          Awaitility.await()
              .atMost(Duration.ofSeconds(60))
              .until(() -> timed("/dead-letters").getResponse().getStatus() == 200);
        });
    assertThat(String.join("\n", after)).contains("database reachable again");
    assertThat(after).as("the log as the database comes back").hasSizeLessThanOrEqualTo(2);
    assertThat(timed("/dead-letters").getResponse().getContentAsString())
        .doesNotContain("Database unreachable");
  }

  private MvcResult page(String page) throws Exception {
    return mvc.perform(get(page).with(user("victor").roles("VIEWER"))).andReturn();
  }

  private MvcResult timed(String page) throws Exception {
    long start = System.nanoTime();
    MvcResult r = page(page);
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    slowest = took.compareTo(slowest) > 0 ? took : slowest;
    assertThat(took).as("%s answered in %s", page, took).isLessThan(PAGE_LIMIT);
    return r;
  }

  interface Steps {
    void run() throws Exception;
  }

  /** The lines the console logs (slf4j-simple writes to System.err) while {@code steps} run. */
  private static List<String> captureLog(Steps steps) throws Exception {
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    OutputStream tee =
        new OutputStream() {
          @Override
          public void write(int b) {
            captured.write(b);
            original.write(b);
          }

          @Override
          public void write(byte[] b, int off, int len) {
            captured.write(b, off, len);
            original.write(b, off, len);
          }
        };
    System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
    try {
      steps.run();
    } finally {
      System.setErr(original);
    }
    List<String> lines = new ArrayList<>();
    for (String line : captured.toString(StandardCharsets.UTF_8).split("\n")) {
      // the test's own database starting and stopping is not the console's log
      if (!line.isBlank() && !line.contains("dev.postbox.testkit") && !line.contains("io.zonky")) {
        lines.add(line);
      }
    }
    return lines;
  }
}
