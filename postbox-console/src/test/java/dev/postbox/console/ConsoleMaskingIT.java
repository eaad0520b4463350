package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.redirectedUrl;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.postbox.core.Message;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.mock.web.MockHttpSession;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;

/**
 * Masking by policy, over HTTP with real logins: a dead letter, a parked key and a blocked outbox
 * row of one message carry a marker in the error message, a header value, the payload, the parked
 * key's last error and the relay's error. A viewer, and an operator without the reveal permission,
 * crawl every page linked from the dashboard and fetch the JSON API: the marker is in no response.
 * The admin (reveal by role) and an operator given the permission in the settings see the text, and
 * the payload after the audited reveal.
 */
@SpringBootTest(classes = ConsoleApplication.class)
@AutoConfigureMockMvc
class ConsoleMaskingIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-masking");
  static final String RITA_PASSWORD = "rita-secret-1";
  static final String MARKER = "ZQXMARKER";
  static final String PAYLOAD = "{\"note\":\"" + MARKER + "-payload\",\"n\":1}";
  static final Message MESSAGE =
      Message.builder("orders", "order.placed")
          .key("k-mask")
          .header("x-customer", MARKER + "-header")
          .jsonPayload(PAYLOAD)
          .build();
  static long letter;

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    DB.register(registry);
    registry.add("postbox.console.users.rita.password", () -> RITA_PASSWORD);
    registry.add("postbox.console.users.rita.role", () -> "OPERATOR");
    registry.add("postbox.console.users.rita.reveal", () -> "true");
  }

  @Autowired MockMvc mvc;

  @BeforeAll
  static void plant() {
    var ds = DB.dataSource();
    letter =
        ConsoleFixtures.deadLetter(
            ds, "shipping", MESSAGE, MARKER + "-error for order 5", "3f2a9c0d1e4b5a67");
    ConsoleFixtures.parked(ds, "inventory", "k-mask", MESSAGE.id(), MARKER + "-parked");
    ConsoleFixtures.blocked(ds, "k-mask", MESSAGE.id(), MARKER + "-relay");
  }

  private MockHttpSession login(String user, String password) throws Exception {
    return (MockHttpSession)
        mvc.perform(post("/login").param("username", user).param("password", password).with(csrf()))
            .andExpect(redirectedUrl("/"))
            .andReturn()
            .getRequest()
            .getSession(false);
  }

  private String body(MockHttpSession session, String url) throws Exception {
    MockHttpServletResponse r =
        mvc.perform(get(URI.create(url)).session(session)).andReturn().getResponse();
    assertThat(r.getStatus()).as(url).isEqualTo(200);
    return r.getContentAsString(StandardCharsets.UTF_8);
  }

  private static final Pattern HREF = Pattern.compile("href=\"(/[^\"]*)\"");

  /**
   * Every page reachable from the dashboard and the given ones, by their links (at most 300): each
   * page's URL and body.
   */
  private Map<String, String> crawl(MockHttpSession session, List<String> seeds) throws Exception {
    Map<String, String> seen = new LinkedHashMap<>();
    Deque<String> todo = new ArrayDeque<>();
    todo.add("/");
    todo.addAll(seeds);
    while (!todo.isEmpty() && seen.size() < 300) {
      String url = todo.poll();
      if (seen.containsKey(url)) {
        continue;
      }
      MockHttpServletResponse r =
          mvc.perform(get(URI.create(url)).session(session)).andReturn().getResponse();
      String body = r.getContentAsString(StandardCharsets.UTF_8);
      seen.put(url, body);
      Matcher m = HREF.matcher(body);
      while (m.find()) {
        String link = m.group(1).replace("&amp;", "&");
        if (!link.startsWith("/css/") && !link.startsWith("/js/") && !link.startsWith("/log")) {
          todo.add(link);
        }
      }
    }
    return seen;
  }

  @Test
  void aViewerAndAnOperatorWithoutThePermissionGetTheMarkerFromNoPageAndNoApi() throws Exception {
    String id = MESSAGE.id().toString();
    for (String[] who :
        List.of(
            new String[] {"victor", ConsoleTestDatabase.VIEWER_PASSWORD},
            new String[] {"olivia", ConsoleTestDatabase.OPERATOR_PASSWORD})) {
      MockHttpSession session = login(who[0], who[1]);
      Map<String, String> pages =
          crawl(
              session,
              List.of(
                  "/held",
                  "/trace?id=" + id,
                  "/dead-letters?key=k-mask",
                  "/api/overview",
                  "/api/dead-letters",
                  "/api/dead-letters?key=k-mask",
                  "/api/dead-letters/" + letter));
      assertThat(pages.keySet())
          .as("the crawl reached the letter, its group and its trace from the dashboard")
          .contains("/dead-letters/" + letter, "/dead-letters?fingerprint=3f2a9c0d1e4b5a67");
      for (Map.Entry<String, String> p : pages.entrySet()) {
        assertThat(p.getValue()).as(who[0] + " " + p.getKey()).doesNotContain(MARKER);
      }
      String page = pages.get("/dead-letters/" + letter);
      assertThat(page)
          .contains("com.shop.WarehouseMissing", "message hidden", "stack trace hidden")
          .contains("x-customer")
          .contains(
              PAYLOAD.getBytes(StandardCharsets.UTF_8).length
                  + " bytes, application/json,"
                  + " hidden")
          .doesNotContain("id=\"reveal\"");
      assertThat(pages.get("/api/dead-letters/" + letter))
          .contains("\"errorMessage\":\"message hidden\"", "\"stackTrace\":\"stack trace hidden\"")
          .contains("\"name\":\"x-customer\",\"value\":\"hidden\"");
      assertThat(pages.get("/held")).contains("error hidden");
      assertThat(pages.get("/trace?id=" + id)).contains("publish-held", "error hidden");
      // the reveal action is refused, and says nothing either
      MockHttpServletResponse denied =
          mvc.perform(
                  post("/actions/dead-letters/" + letter + "/reveal").session(session).with(csrf()))
              .andExpect(status().isForbidden())
              .andReturn()
              .getResponse();
      assertThat(denied.getContentAsString(StandardCharsets.UTF_8)).doesNotContain(MARKER);
    }
  }

  @Test
  void theAdminByRoleAndAnOperatorGivenThePermissionSeeTheTextAndRevealThePayload()
      throws Exception {
    for (String[] who :
        List.of(
            new String[] {"admin", ConsoleTestDatabase.ADMIN_PASSWORD},
            new String[] {"rita", RITA_PASSWORD})) {
      MockHttpSession session = login(who[0], who[1]);
      String page = body(session, "/dead-letters/" + letter);
      assertThat(page)
          .as(who[0])
          .contains(MARKER + "-error", MARKER + "-header", "Shipping.java:42", "id=\"reveal\"")
          .contains(", reveals</span>)")
          .as("the payload waits for the audited reveal")
          .doesNotContain(MARKER + "-payload");
      assertThat(body(session, "/api/dead-letters/" + letter))
          .contains(MARKER + "-error", MARKER + "-header")
          .doesNotContain(MARKER + "-payload");
      assertThat(body(session, "/api/dead-letters?key=k-mask")).contains(MARKER + "-error");
      assertThat(body(session, "/dead-letters?key=k-mask")).contains(MARKER + "-error");
      assertThat(body(session, "/held")).contains(MARKER + "-parked", MARKER + "-relay");
      assertThat(body(session, "/trace?id=" + MESSAGE.id()))
          .contains(MARKER + "-relay", MARKER + "-error");
      String revealed =
          mvc.perform(
                  post("/actions/dead-letters/" + letter + "/reveal").session(session).with(csrf()))
              .andExpect(status().isOk())
              .andReturn()
              .getResponse()
              .getContentAsString(StandardCharsets.UTF_8);
      assertThat(revealed).contains(MARKER + "-payload");
    }
    List<String> reveals =
        ConsoleFixtures.query(
            DB.dataSource(),
            "SELECT by_whom FROM postbox_replay_audit WHERE action = 'REVEAL_PAYLOAD' ORDER BY id");
    assertThat(reveals).containsExactly("admin", "rita");
  }

  @Test
  void theRolesOfTheRevealPermissionAreTheSettingsAndUsersKeepTheirRoleName() throws Exception {
    Set<String> shown = new LinkedHashSet<>();
    for (String[] who :
        List.of(
            new String[] {"victor", ConsoleTestDatabase.VIEWER_PASSWORD},
            new String[] {"olivia", ConsoleTestDatabase.OPERATOR_PASSWORD},
            new String[] {"admin", ConsoleTestDatabase.ADMIN_PASSWORD})) {
      String page = body(login(who[0], who[1]), "/");
      Matcher m = Pattern.compile("\\(<span>([^<]*)</span>\\)").matcher(page);
      List<String> roles = new ArrayList<>();
      while (m.find()) {
        roles.add(m.group(1));
      }
      shown.addAll(roles);
    }
    assertThat(shown).containsExactly("viewer", "operator", "admin, reveals");
  }
}
