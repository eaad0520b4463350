package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.admin.PostboxAdmin;
import dev.postbox.admin.ReplayJobRunner;
import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
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
 * A bulk replay in headless Chromium: an admin opens a failure group's replay preview from the
 * dead-letter explorer, reads the count, types a reason and the count, starts the job, follows its
 * progress (worked by a runner the test steps: the console's own is off) and cancels it. Runs
 * whenever CI=true; elsewhere it is skipped, with one line, if Chromium is not installed.
 */
@SpringBootTest(
    classes = ConsoleApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ConsoleReplayJobBrowserIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-replay-browser");

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    DB.register(registry);
    registry.add("postbox.console.replay-jobs.run", () -> "false");
  }

  static WebDriver browser;
  static HeadlessChromium chromium;

  @LocalServerPort int port;
  @Autowired PostboxAdmin admin;

  @BeforeAll
  static void startBrowser() throws IOException {
    chromium = HeadlessChromium.startOrSkip("ConsoleReplayJobBrowserIT");
    browser = chromium.driver();
  }

  @AfterAll
  static void stopBrowser() throws IOException {
    if (chromium != null) {
      chromium.close();
    }
  }

  private String url(String path) {
    return "http://127.0.0.1:" + port + path;
  }

  private WebElement find(String id) {
    return new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.visibilityOfElementLocated(By.id(id)));
  }

  /** Waits for the page after a click: until {@code id}'s text contains {@code text}. */
  private void awaitText(String id, String text) {
    new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.textToBePresentInElementLocated(By.id(id), text));
  }

  @Test
  void anAdminPreviewsConfirmsFollowsAndCancelsABulkReplay() {
    var ds = DB.dataSource();
    for (int i = 0; i < 120; i++) {
      ConsoleFixtures.deadLetter(
          ds,
          i % 2 == 0 ? "shipping" : "billing",
          ConsoleFixtures.order("shop.orders", "o-" + i, "{\"order\":" + i + "}"),
          "no warehouse for W-" + i,
          "fp-no-warehouse");
    }

    browser.get(url("/dead-letters"));
    find("username").sendKeys("admin");
    find("password").sendKeys(ConsoleTestDatabase.ADMIN_PASSWORD);
    find("login").click();
    find("replay-job-0").click();

    // the preview: how many, where from, and the count to type
    assertThat(find("preview-count").getText()).isEqualTo("120");
    assertThat(find("preview-consumers").getText()).isEqualTo("billing, shipping");
    assertThat(find("confirm-word").getText()).isEqualTo("120");
    assertThat(browser.findElements(By.cssSelector("#sample tr"))).hasSize(6);

    // a wrong count is refused with the preview again; the right one starts the job
    find("job-reason").sendKeys("warehouse W added");
    find("job-confirmation").sendKeys("12");
    find("start-job").click();
    awaitText("start-error", "covers 120 letters now, not 12");
    find("job-reason").clear();
    find("job-reason").sendKeys("warehouse W added");
    find("job-confirmation").sendKeys("120");
    find("start-job").click();
    awaitText("flash", "started: 120 letters");
    // the page reloads itself while the job runs: its texts are awaited, never read once
    awaitText("job-state", "RUNNING");
    awaitText("job-done", "0 of 120");

    // progress: the page reloads itself while the job runs
    ReplayJobRunner runner = admin.replayJobRunner("browser-test", Duration.ofSeconds(1));
    for (int i = 0; i < 3; i++) {
      runner.step();
    }
    awaitText("job-done", "3 of 120");
    awaitText("job-replayed", "3");

    chromium.click("cancel-job");
    awaitText("job-state", "CANCELLED");
    assertThat(find("flash").getText()).contains("cancelled after 3 of 120 letters");
    assertThat(browser.findElements(By.id("cancel-job"))).isEmpty();
    assertThat(runner.step()).isFalse();
    assertThat(
            ConsoleFixtures.query(
                ds, "SELECT count(*) FROM postbox_dead_letter WHERE status = 'PENDING'"))
        .containsExactly("117");

    browser.get(url("/replay-jobs"));
    assertThat(find("jobs").getText()).contains("CANCELLED").contains("3 / 120");
    find("logout").click();
    new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.urlContains("/login?logout"));
  }
}
