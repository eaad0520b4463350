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

import dev.postbox.core.Message;
import java.util.List;
import java.util.UUID;
import org.hamcrest.Matchers;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.http.MediaType;
import org.springframework.mock.web.MockHttpSession;
import org.springframework.security.core.authority.SimpleGrantedAuthority;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;
import org.springframework.test.web.servlet.request.RequestPostProcessor;

/**
 * The console's security matrix on the test kit's PostgreSQL: no page or API without a login, roles
 * checked on every action, CSRF on every POST, secure headers, login limited, and every action
 * (done as the logged-in user) leaves its audit row.
 */
@SpringBootTest(classes = ConsoleApplication.class)
@AutoConfigureMockMvc
class ConsoleSecurityIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-security");

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    DB.register(registry);
    registry.add("postbox.console.login.attempts-per-minute", () -> "3");
    registry.add("postbox.console.login.backoff", () -> "PT10M");
  }

  @Autowired MockMvc mvc;

  static final List<String> PAGES =
      List.of(
          "/",
          "/dead-letters",
          "/dead-letters/1",
          "/held",
          "/trace",
          "/trace?id=" + UUID.randomUUID(),
          "/audit",
          "/replay-jobs",
          "/replay-jobs/preview?fingerprint=f");
  static final List<String> APIS = List.of("/api/overview", "/api/dead-letters");
  static final List<String> ACTIONS =
      List.of(
          "/actions/dead-letters/1/reveal",
          "/actions/dead-letters/1/replay",
          "/actions/dead-letters/1/edit?payload=x&reason=r",
          "/actions/dead-letters/1/discard?reason=r",
          "/actions/group/replay?fingerprint=f",
          "/actions/group/discard?fingerprint=f&reason=r",
          "/actions/parked/release?consumer=c&key=k",
          "/actions/parked/skip?consumer=c&key=k&reason=r",
          "/actions/blocked/1/retry",
          "/actions/blocked/1/skip?reason=r",
          "/actions/replay-jobs?fingerprint=f&reason=r",
          "/actions/replay-jobs/1/pause",
          "/actions/replay-jobs/1/resume",
          "/actions/replay-jobs/1/cancel");

  private static RequestPostProcessor viewer() {
    return user("victor").roles("VIEWER");
  }

  private static RequestPostProcessor operator() {
    return user("olivia").roles("OPERATOR");
  }

  private static RequestPostProcessor admin() {
    return user("admin").roles("ADMIN");
  }

  private static final RequestPostProcessor REVEALER =
      user("olivia")
          .authorities(
              new SimpleGrantedAuthority("ROLE_OPERATOR"),
              new SimpleGrantedAuthority(Masking.REVEAL));

  /** An operator given the reveal permission. */
  private static RequestPostProcessor revealer() {
    return REVEALER;
  }

  @Test
  void withoutASessionPagesRedirectToLoginAndTheApiAnswers401() throws Exception {
    for (String page : PAGES) {
      mvc.perform(get(page)).andExpect(status().isFound()).andExpect(redirectedUrl("/login"));
    }
    for (String api : APIS) {
      mvc.perform(get(api)).andExpect(status().isUnauthorized());
    }
    mvc.perform(get("/").accept(MediaType.APPLICATION_JSON)).andExpect(status().isUnauthorized());
    int before = ConsoleFixtures.audit(DB.dataSource()).size();
    for (String action : ACTIONS) {
      // with a valid CSRF token but no login: to the login page; without the token: 403
      mvc.perform(post(action).with(csrf()))
          .andExpect(status().isFound())
          .andExpect(redirectedUrl("/login"));
      mvc.perform(post(action)).andExpect(status().isForbidden());
    }
    assertThat(ConsoleFixtures.audit(DB.dataSource())).hasSize(before);
    mvc.perform(get("/login")).andExpect(status().isOk());
    mvc.perform(get("/css/console.css")).andExpect(status().isOk());
  }

  @Test
  void aViewerReadsButCannotActOrRevealAnOperatorCannotActOnWholeGroups() throws Exception {
    long id =
        ConsoleFixtures.deadLetter(
            DB.dataSource(),
            "shipping",
            ConsoleFixtures.order("orders", "o-1", "{\"secret\":\"card-4111\"}"),
            "no warehouse for W-1");
    int before = ConsoleFixtures.audit(DB.dataSource()).size();
    for (String page : PAGES) {
      mvc.perform(get(page.replace("/dead-letters/1", "/dead-letters/" + id)).with(viewer()))
          .andExpect(status().isOk());
    }
    // the payload is masked for every role (until the audited reveal); the error message for
    // every role without the reveal permission (ConsoleMaskingIT has the whole policy)
    for (RequestPostProcessor who : List.of(viewer(), operator(), admin(), revealer())) {
      boolean reveals = who == revealer();
      mvc.perform(get("/dead-letters/" + id).with(who))
          .andExpect(status().isOk())
          .andExpect(
              content()
                  .string(
                      reveals
                          ? Matchers.containsString("no warehouse for W-1")
                          : Matchers.not(Matchers.containsString("no warehouse for W-1"))))
          .andExpect(content().string(Matchers.not(Matchers.containsString("card-4111"))));
    }
    for (String action : ACTIONS) {
      mvc.perform(post(action.replace("/1/", "/" + id + "/")).with(viewer()).with(csrf()))
          .andExpect(status().isForbidden());
    }
    mvc.perform(post("/actions/group/replay?fingerprint=f").with(operator()).with(csrf()))
        .andExpect(status().isForbidden());
    mvc.perform(post("/actions/group/discard?fingerprint=f&reason=r").with(operator()).with(csrf()))
        .andExpect(status().isForbidden());
    mvc.perform(post("/actions/replay-jobs?fingerprint=f&reason=r").with(operator()).with(csrf()))
        .andExpect(status().isForbidden());
    // an operator without the CSRF token: 403 too
    mvc.perform(post("/actions/dead-letters/" + id + "/replay").with(operator()))
        .andExpect(status().isForbidden());
    assertThat(ConsoleFixtures.audit(DB.dataSource())).as("nothing was done").hasSize(before);
    assertThat(
            ConsoleFixtures.query(
                DB.dataSource(), "SELECT status FROM postbox_dead_letter WHERE id = " + id))
        .containsExactly("PENDING");
  }

  @Test
  void everyActionIsDoneAsTheLoggedInUserAndAudited() throws Exception {
    var ds = DB.dataSource();
    String topic = "orders";
    long revealed =
        ConsoleFixtures.deadLetter(
            ds, "billing", ConsoleFixtures.order(topic, "a-1", "{\"n\":1}"), "bad total 1");
    long replayed =
        ConsoleFixtures.deadLetter(
            ds, "billing", ConsoleFixtures.order(topic, "a-2", "{\"n\":2}"), "bad total 2");
    long edited =
        ConsoleFixtures.deadLetter(
            ds, "billing", ConsoleFixtures.order(topic, "a-3", "{\"n\":3}"), "bad total 3");
    long discarded =
        ConsoleFixtures.deadLetter(
            ds, "billing", ConsoleFixtures.order(topic, "a-4", "{\"n\":4}"), "bad total 4");
    Message g1 = ConsoleFixtures.order(topic, "g-1", "{}");
    ConsoleFixtures.deadLetter(ds, "audit", g1, "group alpha");
    ConsoleFixtures.deadLetter(
        ds, "audit", ConsoleFixtures.order(topic, "g-2", "{}"), "group beta");
    ConsoleFixtures.parked(ds, "inventory", "p-1");
    ConsoleFixtures.parked(ds, "inventory", "p-2");
    long retry = ConsoleFixtures.blocked(ds, "b-1");
    long skip = ConsoleFixtures.blocked(ds, "b-2");
    int before = ConsoleFixtures.audit(ds).size();

    MvcResult shown =
        mvc.perform(
                post("/actions/dead-letters/" + revealed + "/reveal").with(revealer()).with(csrf()))
            .andExpect(status().isOk())
            .andReturn();
    assertThat(shown.getResponse().getContentAsString()).contains("{&quot;n&quot;:1}");
    expectRedirect(post("/actions/dead-letters/" + replayed + "/replay").with(operator()));
    expectRedirect(
        post("/actions/dead-letters/" + edited + "/edit")
            .param("payload", "{\"n\":30}")
            .param("reason", "total fixed")
            .with(operator()));
    expectRedirect(
        post("/actions/dead-letters/" + discarded + "/discard")
            .param("reason", "test order")
            .with(operator()));
    expectRedirect(
        post("/actions/group/replay")
            .param("fingerprint", "com.shop.WarehouseMissing|group alpha|" + topic)
            .with(admin()));
    expectRedirect(
        post("/actions/group/discard")
            .param("fingerprint", "com.shop.WarehouseMissing|group beta|" + topic)
            .param("reason", "obsolete")
            .with(admin()));
    expectRedirect(
        post("/actions/parked/release")
            .param("consumer", "inventory")
            .param("key", "p-1")
            .with(operator()));
    expectRedirect(
        post("/actions/parked/skip")
            .param("consumer", "inventory")
            .param("key", "p-2")
            .param("reason", "bad head")
            .with(operator()));
    expectRedirect(post("/actions/blocked/" + retry + "/retry").with(operator()));
    expectRedirect(
        post("/actions/blocked/" + skip + "/skip").param("reason", "too large").with(operator()));

    List<String> rows = ConsoleFixtures.audit(ds);
    assertThat(rows.subList(before, rows.size()))
        .containsExactly(
            "olivia|REVEAL_PAYLOAD",
            "olivia|REPLAY",
            "olivia|EDIT",
            "olivia|DISCARD",
            "admin|REPLAY",
            "admin|DISCARD",
            "olivia|RELEASE_PARKED",
            "olivia|SKIP_PARKED",
            "olivia|RETRY_BLOCKED",
            "olivia|SKIP_BLOCKED");
    assertThat(
            ConsoleFixtures.query(
                ds,
                "SELECT convert_from(payload, 'UTF8') FROM postbox_outbox WHERE causation_id = '"
                    + ConsoleFixtures.query(
                            ds, "SELECT message_id FROM postbox_dead_letter WHERE id = " + edited)
                        .get(0)
                    + "'"))
        .containsExactly("{\"n\":30}");
    // the API's errors: an action in the wrong state is 409, an unknown letter 404, bad input 400
    mvc.perform(
            post("/actions/dead-letters/" + discarded + "/discard")
                .param("reason", "again")
                .with(operator())
                .with(csrf()))
        .andExpect(status().isConflict());
    mvc.perform(get("/dead-letters/999999").with(viewer())).andExpect(status().isNotFound());
    // text that is no message id is searched as a business key (ConsoleScaleIT)
    mvc.perform(get("/trace?id=nope").with(viewer())).andExpect(status().isOk());
    mvc.perform(get("/audit").with(viewer()))
        .andExpect(content().string(Matchers.containsString("REVEAL_PAYLOAD")));
  }

  @Test
  void malformedParametersAre400TheGroupsCardCountsEveryGroupAndTheAuditShowsWholeIds()
      throws Exception {
    var ds = DB.dataSource();
    List<MockHttpServletRequestBuilder> bad =
        List.of(
            get("/dead-letters").param("after", "%%"),
            get("/dead-letters").param("groupsAfter", "nope"),
            get("/audit").param("after", "!!"),
            get("/held").param("after", "x"),
            get("/api/dead-letters").param("after", "%%"),
            get("/dead-letters").param("consumer", "a\u0000b"),
            get("/audit").param("actor", "\u0000"));
    for (int i = 0; i < bad.size(); i++) {
      int status = mvc.perform(bad.get(i).with(viewer())).andReturn().getResponse().getStatus();
      assertThat(status).as("malformed request %d", i).isEqualTo(400);
    }
    for (char c = 'a'; c <= 'l'; c++) {
      ConsoleFixtures.deadLetter(
          ds, "cards", ConsoleFixtures.order("orders", "c-" + c, "{}"), "group " + c + c);
    }
    String groups =
        ConsoleFixtures.query(ds, "SELECT count(DISTINCT fingerprint) FROM postbox_dead_letter")
            .get(0);
    assertThat(Integer.parseInt(groups)).isGreaterThan(10);
    mvc.perform(get("/").with(viewer()))
        .andExpect(status().isOk())
        .andExpect(
            content()
                .string(
                    Matchers.matchesRegex("(?s).*id=\"failure-groups\"[^>]*>" + groups + "<.*")));
    Message m = ConsoleFixtures.order("orders", "w-1", "{}");
    long id = ConsoleFixtures.deadLetter(ds, "whole-ids", m, "whole id");
    mvc.perform(post("/actions/dead-letters/" + id + "/reveal").with(revealer()).with(csrf()))
        .andExpect(status().isOk());
    mvc.perform(get("/audit").with(viewer()))
        .andExpect(content().string(Matchers.containsString(">" + m.id() + "</a>")));
  }

  private void expectRedirect(MockHttpServletRequestBuilder request) throws Exception {
    mvc.perform(request.with(csrf())).andExpect(status().isFound());
  }

  @Test
  void loginWorksWithTheHashedPasswordsAndIsRateLimited() throws Exception {
    MvcResult ok =
        mvc.perform(
                post("/login")
                    .param("username", "olivia")
                    .param("password", ConsoleTestDatabase.OPERATOR_PASSWORD)
                    .with(csrf()))
            .andExpect(status().isFound())
            .andExpect(redirectedUrl("/"))
            .andReturn();
    MockHttpSession session = (MockHttpSession) ok.getRequest().getSession(false);
    mvc.perform(get("/").session(session))
        .andExpect(status().isOk())
        .andExpect(header().string("X-Frame-Options", "DENY"))
        .andExpect(header().string("X-Content-Type-Options", "nosniff"))
        .andExpect(header().string("Referrer-Policy", "no-referrer"))
        .andExpect(
            header()
                .string("Content-Security-Policy", Matchers.containsString("default-src 'self'")))
        .andExpect(header().string("Cache-Control", Matchers.containsString("no-store")));
    // a login without the CSRF token is refused
    mvc.perform(
            post("/login")
                .param("username", "admin")
                .param("password", ConsoleTestDatabase.ADMIN_PASSWORD))
        .andExpect(status().isForbidden());
    // three failures for one name, each from its own address: the account backs off for every
    // address that failed for it (even with the right password); a clean address is still checked
    for (int attempt = 0; attempt < 3; attempt++) {
      String address = "10.0.0." + (attempt + 1);
      String guess = "guess" + attempt;
      mvc.perform(
              post("/login")
                  .param("username", "victor")
                  .param("password", guess)
                  .with(csrf())
                  .with(r -> {
                    r.setRemoteAddr(address);
                    return r;
                  }))
          .andExpect(status().isFound())
          .andExpect(redirectedUrl("/login?error"));
    }
    victorFrom("10.0.0.3")
        .andExpect(status().isTooManyRequests())
        .andExpect(header().string("Retry-After", Matchers.matchesRegex("[0-9]+")));
    victorFrom("10.0.0.9").andExpect(status().isFound()).andExpect(redirectedUrl("/"));
  }

  /** Victor's login with his right password from {@code address}. */
  private org.springframework.test.web.servlet.ResultActions victorFrom(String address)
      throws Exception {
    return mvc.perform(
        post("/login")
            .param("username", "victor")
            .param("password", ConsoleTestDatabase.VIEWER_PASSWORD)
            .with(csrf())
            .with(r -> {
              r.setRemoteAddr(address);
              return r;
            }));
  }
}
