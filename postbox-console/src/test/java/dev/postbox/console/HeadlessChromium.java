package dev.postbox.console;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.By;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The browser of the console's Chromium tests: Debian's headless Chromium and ChromeDriver with a
 * fresh profile, started once per test class. Always runs under {@code CI=true}; elsewhere a test
 * class without Chromium is skipped with one line saying why.
 */
final class HeadlessChromium implements AutoCloseable {

  static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");

  private final WebDriver driver;
  private final Path profile;

  private HeadlessChromium(WebDriver driver, Path profile) {
    this.driver = driver;
    this.profile = profile;
  }

  /** Starts the browser for {@code testClass}, or skips it (not under CI) without Chromium. */
  static HeadlessChromium startOrSkip(String testClass) throws IOException {
    boolean installed = Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER);
    if (!installed && !"true".equals(System.getenv("CI"))) {
      System.out.println(
          testClass
              + " skipped: no Chromium at "
              + CHROMIUM
              + " / "
              + CHROMEDRIVER
              + " (apt-get install chromium chromium-driver; it always runs under CI=true)");
      Assumptions.abort("Chromium is not installed");
    }
    Path profile = Files.createTempDirectory("postbox-console-chromium");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(CHROMIUM.toFile());
    options.addArguments(
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        "--user-data-dir=" + profile);
    // the driver is given: Selenium Manager never downloads one
    ChromeDriverService service =
        new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile()).build();
    WebDriver driver = new ChromeDriver(service, options);
    driver.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(60));
    return new HeadlessChromium(driver, profile);
  }

  WebDriver driver() {
    return driver;
  }

  /**
   * Clicks element {@code id} on a page that may reload itself meanwhile (a running replay job's):
   * an element found on the page before a reload is stale, and clicking it does nothing, so it is
   * found again on the new page; a click that happened is never repeated.
   */
  void click(String id) {
    new WebDriverWait(driver, Duration.ofSeconds(30))
        .ignoring(StaleElementReferenceException.class)
        .until(d -> {
          d.findElement(By.id(id)).click();
          return true;
        });
  }

  /** Quits the browser and deletes its profile. */
  @Override
  public void close() throws IOException {
    driver.quit();
    try (var files = Files.walk(profile)) {
      files.sorted(java.util.Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
    }
  }
}
