package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.oidcprovider.OidcTestProvider;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * Single sign-on against a real OpenID Connect provider (Spring Authorization Server on a random
 * port, {@link OidcTestProvider}), through the whole authorization code flow over HTTP: the groups
 * claim maps to the console's roles, a user with no mapped group is refused (403, audited), the
 * local users' form login keeps working beside it, logout ends the console session (and a single
 * sign-on user's at the provider too).
 */
@SpringBootTest(
    classes = ConsoleApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ConsoleOidcIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-oidc");
  static final ConfigurableApplicationContext PROVIDER = OidcTestProvider.start();

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    DB.register(registry);
    registry.add("postbox.console.oidc.issuer-uri", () -> OidcTestProvider.issuer(PROVIDER));
    registry.add("postbox.console.oidc.client-id", () -> OidcTestProvider.CLIENT_ID);
    registry.add("postbox.console.oidc.client-secret", () -> OidcTestProvider.CLIENT_SECRET);
    registry.add("postbox.console.oidc.roles.admin", () -> "postbox-admins");
    registry.add("postbox.console.oidc.roles.viewer", () -> "postbox-viewers,auditors");
  }

  @AfterAll
  static void stopProvider() {
    PROVIDER.close();
  }

  @LocalServerPort int port;

  private String console() {
    return "http://127.0.0.1:" + port;
  }

  /** An admin-only action (a whole group's discard) as the logged-in user; its status. */
  private int discardGroup(SsoClient user) throws Exception {
    user.get(console() + "/");
    return user.post(
            console() + "/actions/group/discard",
            Map.of("fingerprint", "no-such-group", "reason", "sso test"))
        .statusCode();
  }

  @Test
  void anAdminGroupUserReachesTheDashboardWithAdminRights() throws Exception {
    SsoClient ada = new SsoClient();
    HttpResponse<String> page = ada.singleSignOn(console(), "ada", OidcTestProvider.PASSWORD);
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.uri().toString()).isEqualTo(console() + "/");
    assertThat(page.body()).contains("ada").contains("admin, reveals");
    assertThat(discardGroup(ada)).isEqualTo(200);
    assertThat(ada.last.body()).contains("Group discard: 0 dead letters discarded.");
    assertThat(securityAudit()).doesNotContain("ada|ACCESS_DENIED", "ada|LOGIN_FAILED");
  }

  @Test
  void aViewerGroupUserIsRefusedAnAdminAction() throws Exception {
    SsoClient vic = new SsoClient();
    HttpResponse<String> page = vic.singleSignOn(console(), "vic", OidcTestProvider.PASSWORD);
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.uri().toString()).isEqualTo(console() + "/");
    assertThat(page.body()).contains("vic").contains(">viewer<");
    assertThat(discardGroup(vic)).isEqualTo(403);
    assertThat(vic.last.body()).contains("Not allowed for your role");
    assertThat(securityAudit()).contains("vic|ACCESS_DENIED");
  }

  @Test
  void aUserWithNoMappedGroupGets403AndTheRefusalIsAudited() throws Exception {
    SsoClient nemo = new SsoClient();
    HttpResponse<String> page = nemo.singleSignOn(console(), "nemo", OidcTestProvider.PASSWORD);
    assertThat(page.statusCode()).isEqualTo(403);
    assertThat(page.body()).contains(Rejections.NO_ROLE).contains("nemo");
    assertThat(securityAudit()).contains("nemo|LOGIN_FAILED");
    // not logged in to the console
    assertThat(nemo.get(console() + "/").uri().toString()).isEqualTo(console() + "/login");
  }

  @Test
  void theLocalUsersFormLoginWorksBesideItAndLogoutEndsTheSession() throws Exception {
    SsoClient admin = new SsoClient();
    HttpResponse<String> login = admin.get(console() + "/login");
    assertThat(login.body()).contains("id=\"sso\"").contains(OidcLogin.START);
    // the logout form's redirect to the provider's end-session endpoint is an allowed form action
    assertThat(login.headers().firstValue("Content-Security-Policy").orElseThrow())
        .contains("form-action 'self' " + OidcTestProvider.issuer(PROVIDER) + ";");
    // Lax, not Strict: the provider's redirect back must carry the session (ConsoleOidcBrowserIT)
    assertThat(login.headers().allValues("Set-Cookie"))
        .anySatisfy(c -> assertThat(c).startsWith("POSTBOX_CONSOLE=").contains("SameSite=Lax"));
    HttpResponse<String> page =
        admin.post(
            console() + "/login",
            Map.of("username", "admin", "password", ConsoleTestDatabase.ADMIN_PASSWORD));
    assertThat(page.uri().toString()).isEqualTo(console() + "/");
    assertThat(page.statusCode()).isEqualTo(200);

    // a local account's logout stays in the console
    HttpResponse<String> adminOut = admin.post(console() + "/logout", Map.of());
    assertThat(redirects(adminOut)).containsExactly(console() + "/login?logout");

    // a single sign-on user's logout passes through the provider's end-session endpoint
    OidcTestProvider.allowPostLogoutRedirect(PROVIDER, console() + "/login?logout");
    SsoClient ada = new SsoClient();
    ada.singleSignOn(console(), "ada", OidcTestProvider.PASSWORD);
    HttpResponse<String> out = ada.post(console() + "/logout", Map.of());
    assertThat(out.uri().toString()).isEqualTo(console() + "/login?logout");
    assertThat(redirects(out))
        .anySatisfy(
            u -> assertThat(u).startsWith(OidcTestProvider.issuer(PROVIDER) + "/connect/logout"));
    assertThat(ada.get(console() + "/").uri().toString()).isEqualTo(console() + "/login");
  }

  /** The URIs a request's redirects went through after the first, in order. */
  private static List<String> redirects(HttpResponse<String> last) {
    java.util.LinkedList<String> uris = new java.util.LinkedList<>();
    for (java.util.Optional<HttpResponse<String>> r = java.util.Optional.of(last);
        r.isPresent() && r.get().previousResponse().isPresent();
        r = r.get().previousResponse()) {
      uris.addFirst(r.get().uri().toString());
    }
    return uris;
  }

  private static List<String> securityAudit() {
    return ConsoleFixtures.query(
        DB.dataSource(),
        "SELECT by_whom || '|' || action FROM postbox_replay_audit WHERE action IN ('LOGIN_FAILED',"
            + " 'ACCESS_DENIED') ORDER BY id");
  }
}
