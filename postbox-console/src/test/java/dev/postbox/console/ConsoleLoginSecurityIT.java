package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.redirectedUrl;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import java.util.List;
import java.util.UUID;
import org.hamcrest.Matchers;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.mock.web.MockHttpSession;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.ResultActions;

/**
 * Login protection that cannot lock out the admin, and security events in the log and the audit
 * (the test kit's PostgreSQL): the back-off per account and per (address, account), names cycled
 * without a reset, denied and cross-site requests recorded, an expired session sent to the login.
 * The back-off's first wait is 10 minutes here, so that no step depends on how fast the test runs.
 */
@SpringBootTest(classes = ConsoleApplication.class)
@AutoConfigureMockMvc
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleLoginSecurityIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-login");

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    DB.register(registry);
    registry.add("postbox.console.login.attempts-per-minute", () -> "3");
    registry.add("postbox.console.login.backoff", () -> "PT10M");
  }

  @Autowired MockMvc mvc;

  private ResultActions login(String address, String user, String password) throws Exception {
    return mvc.perform(
        post("/login")
            .param("username", user)
            .param("password", password)
            .with(csrf())
            .with(r -> {
              r.setRemoteAddr(address);
              return r;
            }));
  }

  private static List<String> securityAudit() {
    return ConsoleFixtures.query(
        DB.dataSource(),
        "SELECT by_whom || '|' || action FROM postbox_replay_audit WHERE action IN ('LOGIN_FAILED',"
            + " 'LOGIN_THROTTLED', 'ACCESS_DENIED', 'REQUEST_REJECTED') ORDER BY id");
  }

  @Test
  @Order(0)
  void withoutSingleSignOnTheLoginPageIsTheFormAloneAndTheFormLoginWorks() throws Exception {
    mvc.perform(get("/login"))
        .andExpect(status().isOk())
        .andExpect(content().string(Matchers.containsString("id=\"login\"")))
        .andExpect(content().string(Matchers.not(Matchers.containsString("id=\"sso\""))));
    mvc.perform(get(OidcLogin.START)).andExpect(redirectedUrl("/login"));
    login("10.9.9.9", "admin", ConsoleTestDatabase.ADMIN_PASSWORD).andExpect(redirectedUrl("/"));
  }

  @Test
  @Order(1)
  void oneOperatorsTyposBehindAProxyDoNotLockOutTheAdminAndAreAudited() throws Exception {
    String proxy = "10.1.1.1";
    for (int i = 0; i < 3; i++) {
      login(proxy, "olivia", "typo" + i).andExpect(redirectedUrl("/login?error"));
    }
    // olivia from the proxy backs off, even with her right password...
    login(proxy, "olivia", ConsoleTestDatabase.OPERATOR_PASSWORD)
        .andExpect(status().isTooManyRequests())
        .andExpect(header().string("Retry-After", Matchers.matchesRegex("[0-9]+")));
    // ...the admin behind the same proxy is not touched
    login(proxy, "admin", ConsoleTestDatabase.ADMIN_PASSWORD).andExpect(redirectedUrl("/"));
    // and olivia from an address that has not failed for her gets in
    login("10.1.1.2", "olivia", ConsoleTestDatabase.OPERATOR_PASSWORD)
        .andExpect(redirectedUrl("/"));
    assertThat(securityAudit())
        .containsExactly(
            "olivia|LOGIN_FAILED",
            "olivia|LOGIN_FAILED",
            "olivia|LOGIN_FAILED",
            "olivia|LOGIN_THROTTLED");
  }

  @Test
  @Order(2)
  void aDeniedActionIsAuditedAndLogged() throws Exception {
    int before = securityAudit().size();
    mvc.perform(
            post("/actions/dead-letters/1/replay")
                .with(user("victor").roles("VIEWER"))
                .with(csrf()))
        .andExpect(status().isForbidden());
    assertThat(securityAudit().subList(before, securityAudit().size()))
        .containsExactly("victor|ACCESS_DENIED");
  }

  @Test
  @Order(3)
  void aCrossSitePostIsRejectedWithAClearMessageAndTheOperatorStaysLoggedIn() throws Exception {
    MockHttpSession session =
        (MockHttpSession)
            login("10.3.3.3", "olivia", ConsoleTestDatabase.OPERATOR_PASSWORD)
                .andExpect(redirectedUrl("/"))
                .andReturn()
                .getRequest()
                .getSession(false);
    int before = securityAudit().size();
    // a valid token but another site's Origin
    mvc.perform(
            post("/actions/dead-letters/1/replay")
                .session(session)
                .with(csrf())
                .header("Origin", "https://evil.example"))
        .andExpect(status().isForbidden())
        .andExpect(header().doesNotExist("Set-Cookie"))
        .andExpect(content().string(Matchers.containsString(Rejections.NOT_ACCEPTED)));
    // a forged form without the token
    mvc.perform(post("/actions/dead-letters/1/replay").session(session))
        .andExpect(status().isForbidden())
        .andExpect(header().doesNotExist("Set-Cookie"))
        .andExpect(content().string(Matchers.containsString(Rejections.NOT_ACCEPTED)));
    // still logged in
    mvc.perform(get("/").session(session)).andExpect(status().isOk());
    // the console's own origin passes the check (MockMvc's host is localhost)
    mvc.perform(
            post("/actions/dead-letters/999999/replay")
                .session(session)
                .with(csrf())
                .header("Origin", "http://localhost"))
        .andExpect(status().isNotFound());
    // the console's own form as a browser sends it under Referrer-Policy: no-referrer (Origin:
    // null): left to the CSRF token, which it carries (ConsoleBrowserIT's login failed on this)
    mvc.perform(
            post("/actions/dead-letters/999999/replay")
                .session(session)
                .with(csrf())
                .header("Origin", "null"))
        .andExpect(status().isNotFound());
    assertThat(securityAudit().subList(before, securityAudit().size()))
        .containsExactly("olivia|REQUEST_REJECTED", "olivia|REQUEST_REJECTED");
  }

  @Test
  @Order(4)
  void anExpiredSessionClickingReplayGoesToTheLoginPage() throws Exception {
    mvc.perform(
            post("/actions/dead-letters/1/replay")
                .param("_csrf", "token-of-the-expired-session")
                .with(r -> {
                  r.setRequestedSessionId("expired-session");
                  r.setRequestedSessionIdValid(false);
                  return r;
                }))
        .andExpect(status().isFound())
        .andExpect(redirectedUrl("/login?expired"));
    mvc.perform(get("/login").param("expired", ""))
        .andExpect(content().string(Matchers.containsString("Your session expired")));
  }

  @Test
  @Order(5)
  void cyclingThroughTenThousandNamesDoesNotResetTheBackOff() throws Exception {
    String guesser = "10.5.5.5";
    for (int i = 0; i < 3; i++) {
      login(guesser, "victor", "guess" + i).andExpect(redirectedUrl("/login?error"));
    }
    login(guesser, "victor", "guess").andExpect(status().isTooManyRequests());
    // the guesser's second address cycles through 10,000 names (once enough to reset a limiter
    // that kept one entry per name)...
    for (int i = 0; i < 10_000; i++) {
      login("10.5.5.6", "user-" + UUID.randomUUID(), "guess");
    }
    // ...and the first address still backs off for victor
    login(guesser, "victor", ConsoleTestDatabase.VIEWER_PASSWORD)
        .andExpect(status().isTooManyRequests());
    assertThat(securityAudit().size())
        .as("security events recorded at most %d a minute", SecurityEvents.PER_MINUTE)
        .isLessThan(10_000 / 10);
  }
}
