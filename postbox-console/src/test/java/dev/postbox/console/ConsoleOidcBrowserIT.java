package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.oidcprovider.OidcTestProvider;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Single sign-on in headless Chromium against a real OpenID Connect provider ({@link
 * OidcTestProvider}): an admin clicks "Log in with single sign-on", logs in on the provider's own
 * form, lands on the dashboard as admin, and logs out. Runs whenever CI=true; elsewhere it is
 * skipped, with one line, if Chromium is not installed.
 */
@SpringBootTest(
    classes = ConsoleApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ConsoleOidcBrowserIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-oidc-browser");
  static final ConfigurableApplicationContext PROVIDER = OidcTestProvider.start();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    DB.register(registry);
    registry.add("postbox.console.oidc.issuer-uri", () -> OidcTestProvider.issuer(PROVIDER));
    registry.add("postbox.console.oidc.client-id", () -> OidcTestProvider.CLIENT_ID);
    registry.add("postbox.console.oidc.client-secret", () -> OidcTestProvider.CLIENT_SECRET);
    registry.add("postbox.console.oidc.roles.admin", () -> "postbox-admins");
  }

  static WebDriver browser;
  static Path profile;

  @LocalServerPort int port;

  @BeforeAll
  static void startBrowser() throws IOException {
    Path chromium = ConsoleBrowserIT.CHROMIUM;
    Path driver = ConsoleBrowserIT.CHROMEDRIVER;
    boolean installed = Files.isExecutable(chromium) && Files.isExecutable(driver);
    if (!installed && !"true".equals(System.getenv("CI"))) {
      System.out.println(
          "ConsoleOidcBrowserIT skipped: no Chromium at "
              + chromium
              + " / "
              + driver
              + " (apt-get install chromium chromium-driver; it always runs under CI=true)");
      Assumptions.abort("Chromium is not installed");
    }
    profile = Files.createTempDirectory("postbox-console-oidc-chromium");
    ChromeOptions options = new ChromeOptions();
    options.setBinary(chromium.toFile());
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
        new ChromeDriverService.Builder().usingDriverExecutable(driver.toFile()).build();
    browser = new ChromeDriver(service, options);
    browser.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(60));
  }

  @AfterAll
  static void stop() throws IOException {
    if (browser != null) {
      browser.quit();
    }
    PROVIDER.close();
    if (profile != null) {
      try (var files = Files.walk(profile)) {
        files.sorted(java.util.Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
      }
    }
  }

  private WebElement find(By by) {
    return new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.visibilityOfElementLocated(by));
  }

  @Test
  void anAdminLogsInWithSingleSignOnAndOut() {
    String console = "http://127.0.0.1:" + port;
    browser.get(console + "/login");
    find(By.id("sso")).click();
    // the provider's own login form
    find(By.id("username")).sendKeys("ada");
    find(By.id("password")).sendKeys(OidcTestProvider.PASSWORD);
    find(By.cssSelector("button[type=submit]")).click();
    assertThat(find(By.id("who")).getText()).isEqualTo("ada (admin, reveals)");
    assertThat(browser.getCurrentUrl()).isEqualTo(console + "/");
    find(By.id("logout")).click();
    new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.urlToBe(console + "/login?logout"));
    browser.get(console + "/");
    new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.urlToBe(console + "/login"));
  }
}
