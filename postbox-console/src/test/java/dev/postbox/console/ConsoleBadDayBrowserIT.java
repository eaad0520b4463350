package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.admin.PostboxAdmin;
import dev.postbox.admin.ReplayJob;
import dev.postbox.admin.ReplayJobRunner;
import dev.postbox.jdbc.PostboxMigrations;
import dev.postbox.testkit.KafkaBroker;
import dev.postbox.testkit.PostgresServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Operations on a bad day, scripted in headless Chromium against a PostgreSQL and a Kafka broker of
 * the test's own (each stopped and started again by the test): 10,000 dead letters of one failure
 * group and one letter that failed for another reason; the broker stops; an admin logs in, finds
 * the odd letter and reads why it failed, previews the 10,000-letter group, replays it as a job,
 * follows its progress and cancels it half-way; the result page's counts add up to 10,000 and match
 * the rows. Then the database stops: every page still answers, with the banner "Database
 * unreachable since", and an admin can still log in; the database comes back and the pages recover
 * without restarting the console.
 *
 * <p><b>Replay while the broker is down.</b> A replay writes the letter's message to the outbox
 * (the database) and never talks to the broker; the relay delivers it once the broker is back. So
 * the job runs with the broker down, and the test asserts that the replayed letters wait in the
 * outbox backlog on the dashboard. Refusing or pausing the job would only delay a recovery that the
 * outbox makes safe.
 *
 * <p><b>Page times are recorded, not asserted.</b> The target is every page within 2 s, but a
 * wall-clock bound on a shared 2-core build machine tests the machine, not the console. What the
 * test asserts is the mechanism that keeps pages fast: the first page after a dependency stops
 * already shows its banner (the probe gave up after the console's own short timeout, not the
 * client's default) and the dependency's circuit is open afterwards, so later pages do not try it
 * until {@code retry-unreachable-after}. The browser's navigation timing of every page (time to the
 * first byte and to the load event) is written to {@code target/bad-day/page-times.md} and printed.
 *
 * <p>The replay job is worked by a runner the test steps (the console's own is off), so the
 * progress seen and the point of the cancel are exact. Runs whenever CI=true; elsewhere it is
 * skipped, with one line, if Chromium is not installed.
 */
@SpringBootTest(
    classes = ConsoleApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ConsoleBadDayBrowserIT {

  static final int GROUP = 10_000;
  static final String GROUP_FINGERPRINT = "fp-warehouse-missing";
  static final String ODD_FINGERPRINT = "fp-card-declined";
  static final String ODD_ERROR = "card declined: issuer 4711 unavailable";
  static final Path REPORT = Path.of("target", "bad-day", "page-times.md");

  static PostgresServer pg;
  static KafkaBroker broker;
  static String schema;
  static DataSource ds;
  static long oddLetter;

  static WebDriver browser;
  static HeadlessChromium chromium;
  static final List<String> times = new ArrayList<>();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    pg = PostgresServer.embedded();
    pg.start();
    schema = pg.createSchema("console_bad_day_browser");
    ds = pg.dataSource(schema, 2);
    PostboxMigrations.migrate(ds);
    // a shared build machine may start a broker slowly: the default 90 s is not a test of it
    broker = KafkaBroker.builder().startupTimeout(Duration.ofMinutes(5)).build();
    broker.start();
    registry.add("postbox.console.db.url", pg::jdbcUrl);
    registry.add("postbox.console.db.schema", () -> schema);
    registry.add("postbox.console.admin.password", () -> ConsoleTestDatabase.ADMIN_PASSWORD);
    registry.add("postbox.console.kafka.bootstrap-servers", broker::bootstrapServers);
    registry.add("postbox.console.kafka.groups", () -> "shipping");
    registry.add("postbox.console.replay-jobs.run", () -> "false");
    registry.add("postbox.console.replay-rate", () -> "1000");
    // the console's own timeouts otherwise: 1 s for the database and Kafka, retry after 5 s
  }

  @BeforeAll
  static void startBrowser() throws IOException {
    chromium = HeadlessChromium.startOrSkip("ConsoleBadDayBrowserIT");
    browser = chromium.driver();
  }

  @AfterAll
  static void stopEverything() throws IOException {
    try {
      if (chromium != null) {
        chromium.close();
      }
      writeReport();
    } finally {
      if (ds instanceof AutoCloseable c) {
        try {
          c.close();
        } catch (Exception e) {
          // the pool of a stopped test database
        }
      }
      if (broker != null) {
        broker.close();
      }
      if (pg != null) {
        pg.close();
      }
    }
  }

  @LocalServerPort int port;
  @Autowired PostboxAdmin admin;
  @Autowired Health health;

  @Test
  void anAdminWorksThroughABrokerOutageAndADatabaseOutage() {
    seed();

    broker.stop();
    logIn("kafka down");
    dashboardWithKafkaDown();
    findWhyTheOddLetterFailed();
    long job = replayTheGroupAsAJobAndCancelIt();

    broker.start();
    Awaitility.await("the Kafka banner gone once the broker is back")
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofSeconds(1))
        .until(() -> {
          open("kafka back", "/");
          return browser.findElements(By.id("kafka-down")).isEmpty();
        });

    everyPageAnswersWithTheDatabaseDown(job);
    theConsoleRecoversWhenTheDatabaseIsBack(job);
  }

  /** 10,000 letters of one group (one through the store, copied in SQL) and one odd letter. */
  private static void seed() {
    ConsoleFixtures.deadLetter(
        ds,
        "shipping",
        ConsoleFixtures.order("shop.orders", "o-0", "{\"order\":0,\"warehouse\":\"W-7\"}"),
        "no warehouse for W-7",
        GROUP_FINGERPRINT);
    String columns =
        ConsoleFixtures.query(
                ds,
                "SELECT string_agg('d.' || quote_ident(column_name), ', ' ORDER BY"
                    + " ordinal_position) FROM information_schema.columns WHERE table_schema ="
                    + " current_schema() AND table_name = 'postbox_dead_letter' AND is_identity ="
                    + " 'NO' AND is_generated = 'NEVER' AND column_name NOT IN ('message_id',"
                    + " 'offset', 'header_values')")
            .get(0);
    // each copy is another message: its own id, in the column and in the ce_id header the
    // replay decodes (a replay checks the two agree, and the outbox holds an id once)
    ConsoleFixtures.exec(
        ds,
        "INSERT INTO postbox_dead_letter ("
            + columns.replace("d.", "")
            + ", message_id, \"offset\", header_values) SELECT "
            + columns
            + ", x.id, d.\"offset\" + g, (SELECT array_agg(CASE WHEN h.n = 'ce_id' THEN"
            + " convert_to(x.id::text, 'UTF8') ELSE h.v END ORDER BY h.i) FROM"
            + " unnest(d.header_names, d.header_values) WITH ORDINALITY AS h(n, v, i))"
            + " FROM postbox_dead_letter d, generate_series(1, "
            + (GROUP - 1)
            + ") g, LATERAL (SELECT md5('bad-day-' || g)::uuid AS id) x WHERE d.fingerprint = '"
            + GROUP_FINGERPRINT
            + "'");
    oddLetter =
        ConsoleFixtures.deadLetter(
            ds,
            "billing",
            ConsoleFixtures.order("shop.payments", "p-4711", "{\"order\":4711}"),
            "com.shop.PaymentDeclined",
            ODD_ERROR,
            ODD_FINGERPRINT);
    assertThat(
            ConsoleFixtures.query(
                ds,
                "SELECT count(*) || '/' || count(DISTINCT message_id) FROM postbox_dead_letter"
                    + " WHERE fingerprint = '"
                    + GROUP_FINGERPRINT
                    + "' AND status = 'PENDING'"))
        .containsExactly(GROUP + "/" + GROUP);
  }

  private void logIn(String step) {
    browser.get(url("/"));
    assertThat(browser.getCurrentUrl()).endsWith("/login");
    record(step, "/login");
    find("username").sendKeys("admin");
    find("password").sendKeys(ConsoleTestDatabase.ADMIN_PASSWORD);
    find("login").click();
    assertThat(find("who").getText()).contains("admin");
    record(step, "/ (after login)");
  }

  private void dashboardWithKafkaDown() {
    open("kafka down", "/");
    // the first page after the broker stopped says so: the probe gave up after the console's 1 s
    assertThat(find("kafka-down").getText()).startsWith("Kafka unreachable since");
    assertThat(health.isKafkaDown())
        .as("the Kafka circuit is open: pages no longer try it")
        .isTrue();
    assertThat(digits(find("dead-letters-pending").getText())).isEqualTo(GROUP + 1);
    open("kafka down", "/");
    assertThat(find("kafka-down").getText()).startsWith("Kafka unreachable since");
  }

  private void findWhyTheOddLetterFailed() {
    open("kafka down", "/dead-letters");
    assertThat(find("kafka-down").isDisplayed()).isTrue();
    find("groups").findElement(By.linkText("com.shop.PaymentDeclined")).click();
    new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.urlContains("fingerprint=" + ODD_FINGERPRINT));
    record("kafka down", "/dead-letters?fingerprint=" + ODD_FINGERPRINT);
    assertThat(browser.findElements(By.cssSelector("#letters tr td a"))).hasSize(1);
    find("letter-" + oddLetter).click();
    assertThat(find("error-class").getText()).isEqualTo("com.shop.PaymentDeclined");
    assertThat(find("error-message").getText()).isEqualTo(ODD_ERROR);
    assertThat(find("stack-trace").getText()).startsWith("com.shop.PaymentDeclined: " + ODD_ERROR);
    record("kafka down", "/dead-letters/" + oddLetter);
  }

  /** Returns the job's id. */
  private long replayTheGroupAsAJobAndCancelIt() {
    open("kafka down", "/dead-letters");
    find("groups")
        .findElement(
            By.xpath(
                ".//tr[.//a[text()='com.shop.WarehouseMissing']]//a[starts-with(@id,"
                    + " 'replay-job-')]"))
        .click();
    assertThat(find("preview-count").getText()).isEqualTo("10,000");
    record("kafka down", "/replay-jobs/preview?fingerprint=" + GROUP_FINGERPRINT);
    find("job-reason").sendKeys("warehouse W-7 is in the catalogue again");
    find("job-confirmation").sendKeys(find("confirm-word").getText());
    find("start-job").click();
    awaitText("flash", "started: " + GROUP + " letters");
    long job = Long.parseLong(browser.getCurrentUrl().replaceAll(".*/replay-jobs/(\\d+).*", "$1"));
    record("kafka down", "/replay-jobs/" + job);
    // the page reloads itself while the job runs: its texts are awaited, never read once
    awaitText("job-state", "RUNNING");
    awaitText("job-done", "0 of " + GROUP);

    // progress, seen by the page reloading itself while the job runs
    ReplayJobRunner runner = admin.replayJobRunner("bad-day-test", Duration.ofSeconds(1));
    for (int round = 1; round <= 2; round++) {
      for (int i = 0; i < 25; i++) {
        assertThat(runner.step()).isTrue();
      }
      awaitText("job-done", (25 * round) + " of " + GROUP);
      record("kafka down", "/replay-jobs/" + job + " (reloaded)");
    }
    awaitText("job-replayed", "50");

    chromium.click("cancel-job");
    awaitText("job-state", "CANCELLED");
    record("kafka down", "/replay-jobs/" + job + " (cancelled)");
    assertThat(find("flash").getText()).contains("cancelled after 50 of " + GROUP + " letters");
    assertThat(runner.step()).as("nothing left to work").isFalse();
    assertThat(find("job-replayed").getText()).isEqualTo("50");
    assertThat(find("job-skipped").getText()).isEqualTo("0");
    assertThat(find("job-failed").getText()).isEqualTo("0");
    assertThat(find("job-not-worked").getText()).isEqualTo("9,950");
    theRowsAgreeWithThePage(job);

    // replayed while the broker is down: the messages wait in the outbox for the relay
    open("kafka down", "/");
    assertThat(find("outbox-pending").getText()).isEqualTo("50");
    assertThat(find("kafka-down").isDisplayed()).isTrue();
    return job;
  }

  /** Replayed + not worked = 10,000; every replayed letter once in the outbox and the audit. */
  private void theRowsAgreeWithThePage(long job) {
    ReplayJob j = admin.replayJob(job).orElseThrow();
    assertThat(j.state()).isEqualTo(ReplayJob.State.CANCELLED);
    assertThat(List.of(j.total(), j.replayed(), j.skipped(), j.failed(), j.processed()))
        .containsExactly(GROUP, 50, 0, 0, 50);
    assertThat(
            ConsoleFixtures.query(
                ds,
                "SELECT status || '=' || count(*) FROM postbox_dead_letter WHERE fingerprint = '"
                    + GROUP_FINGERPRINT
                    + "' GROUP BY status ORDER BY status"))
        .containsExactly("PENDING=9950", "REPLAYED=50");
    assertThat(
            ConsoleFixtures.query(
                ds,
                "SELECT coalesce(outcome, 'not worked') || '=' || count(*) FROM"
                    + " postbox_replay_job_letter WHERE job_id = "
                    + job
                    + " GROUP BY coalesce(outcome, 'not worked') ORDER BY 1"))
        .containsExactly("REPLAYED=50", "not worked=9950");
    assertThat(
            ConsoleFixtures.query(
                ds,
                "SELECT count(*) || '/' || count(DISTINCT o.message_id) FROM postbox_outbox o JOIN"
                    + " postbox_dead_letter d ON d.message_id = o.message_id WHERE d.status ="
                    + " 'REPLAYED'"))
        .as("outbox rows / distinct messages of the replayed letters")
        .containsExactly("50/50");
    assertThat(
            ConsoleFixtures.query(
                ds, "SELECT count(*) FROM postbox_replay_audit WHERE action = 'REPLAY'"))
        .containsExactly("50");
  }

  private void everyPageAnswersWithTheDatabaseDown(long job) {
    pg.stop();
    List<String> pages =
        List.of(
            "/",
            "/dead-letters",
            "/dead-letters/" + oddLetter,
            "/replay-jobs/preview?fingerprint=" + GROUP_FINGERPRINT,
            "/replay-jobs",
            "/replay-jobs/" + job,
            "/held",
            "/audit",
            "/trace?id=" + UUID.randomUUID());
    for (String page : pages) {
      open("database down", page);
      assertThat(find("database-down").getText()).as(page).startsWith("Database unreachable since");
      assertThat(browser.getTitle()).as(page).endsWith("Postbox console");
      assertThat(browser.getPageSource()).as(page).doesNotContain("Whitelabel");
      // from the first page on: the circuit is open, later pages do not wait for the database
      assertThat(health.isDatabaseDown()).as(page).isTrue();
    }
    // an admin whose session ended can still log in (the users are in the settings)
    find("logout").click();
    new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.urlContains("/login?logout"));
    logIn("database down");
    assertThat(find("database-down").getText()).startsWith("Database unreachable since");
  }

  private void theConsoleRecoversWhenTheDatabaseIsBack(long job) {
    pg.start();
    Awaitility.await("the pages without the database banner")
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofSeconds(1))
        .until(() -> {
          open("database back", "/dead-letters");
          return browser.findElements(By.id("database-down")).isEmpty();
        });
    assertThat(find("groups").getText()).contains("com.shop.WarehouseMissing");
    open("database back", "/replay-jobs/" + job);
    assertThat(find("job-state").getText()).isEqualTo("CANCELLED");
    assertThat(find("job-not-worked").getText()).isEqualTo("9,950");
    open("database back", "/");
    assertThat(digits(find("dead-letters-pending").getText())).isEqualTo(GROUP + 1 - 50);
  }

  private String url(String path) {
    return "http://127.0.0.1:" + port + path;
  }

  private void open(String step, String path) {
    browser.get(url(path));
    record(step, path);
  }

  /** The browser's navigation timing of the page it shows now, into the report. */
  @SuppressWarnings("unchecked")
  private void record(String step, String page) {
    new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(b ->
            (Boolean)
                ((JavascriptExecutor) b)
                    .executeScript(
                        "var n = performance.getEntriesByType('navigation')[0];"
                            + " return n !== undefined && n.loadEventEnd > 0;"));
    Map<String, Object> t =
        (Map<String, Object>)
            ((JavascriptExecutor) browser)
                .executeScript(
                    "var n = performance.getEntriesByType('navigation')[0];"
                        + " return {firstByte: n.responseStart - n.startTime,"
                        + " load: n.loadEventEnd - n.startTime};");
    times.add(
        String.format(
            java.util.Locale.ROOT,
            "| %s | `%s` | %.0f | %.0f |",
            step,
            page,
            ((Number) t.get("firstByte")).doubleValue(),
            ((Number) t.get("load")).doubleValue()));
  }

  private static void writeReport() throws IOException {
    List<String> lines = new ArrayList<>();
    // what the times mean depends on the machine: its cores and how busy it was
    lines.add(
        "Measured on "
            + Runtime.getRuntime().availableProcessors()
            + " cores, load average (1, 5, 15 min) at the end: "
            + loadAverage()
            + ".");
    lines.add("");
    lines.add("| Step | Page | First byte (ms) | Loaded (ms) |");
    lines.add("|---|---|---:|---:|");
    lines.addAll(times);
    Files.createDirectories(REPORT.getParent());
    Files.write(REPORT, lines);
    System.out.println("ConsoleBadDayBrowserIT page times (" + REPORT + "):");
    lines.forEach(System.out::println);
  }

  private static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
      return f[0] + ", " + f[1] + ", " + f[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  private WebElement find(String id) {
    return new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.visibilityOfElementLocated(By.id(id)));
  }

  private void awaitText(String id, String text) {
    new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.textToBePresentInElementLocated(By.id(id), text));
  }

  private static int digits(String text) {
    return Integer.parseInt(text.replaceAll("[^0-9]", ""));
  }
}
