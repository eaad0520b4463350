package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.oidcprovider.OidcTestProvider;
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
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Single sign-on in headless Chromium against a real OpenID Connect provider ({@link
 * OidcTestProvider}): an admin clicks "Log in with single sign-on", logs in on the provider's own
 * form, lands on the dashboard as admin, and logs out, at the provider too: single sign-on asks for
 * the password again. Runs whenever CI=true; elsewhere it is skipped, with one line, if Chromium is
 * not installed.
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
  static HeadlessChromium chromium;

  @LocalServerPort int port;

  @BeforeAll
  static void startBrowser() throws IOException {
    chromium = HeadlessChromium.startOrSkip("ConsoleOidcBrowserIT");
    browser = chromium.driver();
  }

  @AfterAll
  static void stop() throws IOException {
    if (chromium != null) {
      chromium.close();
    }
    PROVIDER.close();
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

    // the logout ends the session at the provider too (RP-initiated logout) and comes back
    OidcTestProvider.allowPostLogoutRedirect(PROVIDER, console + "/login?logout");
    find(By.id("logout")).click();
    new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.urlToBe(console + "/login?logout"));
    browser.get(console + "/");
    new WebDriverWait(browser, Duration.ofSeconds(30))
        .until(ExpectedConditions.urlToBe(console + "/login"));
    // so single sign-on asks for the password again instead of logging straight back in
    find(By.id("sso")).click();
    find(By.id("password"));
    assertThat(browser.getCurrentUrl()).startsWith(OidcTestProvider.issuer(PROVIDER) + "/login");
  }
}
