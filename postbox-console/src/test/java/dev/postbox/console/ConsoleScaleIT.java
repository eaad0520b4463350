package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.postbox.core.Message;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder;
import org.springframework.test.web.servlet.request.RequestPostProcessor;

/**
 * The console at scale: a message found by its business key as well as by its id, counts that are
 * counts or say "10,000+", whole ids with copy buttons, and a parked key's state after an action.
 */
@SpringBootTest(classes = ConsoleApplication.class)
@AutoConfigureMockMvc
class ConsoleScaleIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-scale");

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    DB.register(registry);
  }

  @Autowired MockMvc mvc;

  private static RequestPostProcessor viewer() {
    return user("victor").roles("VIEWER");
  }

  private String page(MockHttpServletRequestBuilder request) throws Exception {
    return mvc.perform(request.with(viewer()))
        .andExpect(status().isOk())
        .andReturn()
        .getResponse()
        .getContentAsString(StandardCharsets.UTF_8);
  }

  @Test
  void theTraceViewAndTheDeadLetterListFindAMessageByItsBusinessKey() throws Exception {
    var ds = DB.dataSource();
    Message first = ConsoleFixtures.order("orders", "cust-42", "{\"n\":1}");
    Message second = ConsoleFixtures.order("orders", "cust-42", "{\"n\":2}");
    Message other = ConsoleFixtures.order("orders", "cust-43", "{\"n\":3}");
    long a = ConsoleFixtures.deadLetter(ds, "shipping", first, "no sku 1");
    long b = ConsoleFixtures.deadLetter(ds, "billing", second, "no sku 2");
    ConsoleFixtures.deadLetter(ds, "shipping", other, "no sku 3");

    String byKey = page(get("/trace").param("id", "cust-42"));
    assertThat(byKey)
        .contains("id=\"by-key\"", first.id().toString(), second.id().toString())
        .contains("/dead-letters/" + a, "/dead-letters/" + b)
        .doesNotContain(other.id().toString());
    String list = page(get("/dead-letters").param("key", "cust-42"));
    assertThat(list).contains("id=\"letter-" + a + "\"", "id=\"letter-" + b + "\"");
    assertThat(list).doesNotContain(other.id().toString());
    // by id as before, and an unknown key says so
    assertThat(page(get("/trace").param("id", first.id().toString())))
        .contains("id=\"timeline\"", "dead-lettered");
    assertThat(page(get("/trace").param("id", "cust-none"))).contains("id=\"by-key-empty\"");
  }

  @Test
  void theFailureGroupsCardSaysTenThousandPlusAsSuch() throws Exception {
    var ds = DB.dataSource();
    ConsoleFixtures.deadLetter(
        ds, "many", ConsoleFixtures.order("orders", "m-0", "{}"), "template", "fp-template");
    String columns =
        ConsoleFixtures.query(
                ds,
                "SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) FROM"
                    + " information_schema.columns WHERE table_schema = current_schema() AND"
                    + " table_name = 'postbox_dead_letter' AND is_identity = 'NO' AND"
                    + " is_generated = 'NEVER' AND column_name <> 'fingerprint'")
            .get(0);
    ConsoleFixtures.exec(
        ds,
        "INSERT INTO postbox_dead_letter ("
            + columns
            + ", fingerprint) SELECT "
            + columns
            + ", 'fp-' || g FROM postbox_dead_letter, generate_series(1, 10001) g"
            + " WHERE fingerprint = 'fp-template'");
    assertThat(
            Long.parseLong(
                ConsoleFixtures.query(
                        ds, "SELECT count(DISTINCT fingerprint) FROM postbox_dead_letter")
                    .get(0)))
        .isGreaterThan(10_000);
    String dashboard = page(get("/"));
    Matcher card = Pattern.compile("id=\"failure-groups\"[^>]*>([^<]*)<").matcher(dashboard);
    assertThat(card.find()).isTrue();
    assertThat(card.group(1)).isEqualTo("10,000+");
    assertThat(card.group(0)).contains("title=\"more than 10,000 groups: counting stops there\"");
  }

  @Test
  void idsAreWholeWithACopyButton() throws Exception {
    var ds = DB.dataSource();
    Message m = ConsoleFixtures.order("orders", "c-1", "{}");
    long id = ConsoleFixtures.deadLetter(ds, "copying", m, "copy me");
    String whole = m.id().toString();
    assertThat(page(get("/dead-letters/" + id)))
        .contains(
            ">" + whole + "</a>", "class=\"copy\"", "data-copy=\"" + whole + "\">copy</button>")
        .contains("src=\"/js/console.js\"");
    assertThat(page(get("/trace").param("id", whole)))
        .contains("id=\"traced-id\">" + whole + "<", "data-copy=\"" + whole + "\"");
    String script = page(get("/js/console.js"));
    assertThat(script).contains("button.copy", "navigator.clipboard");
  }

  @Test
  void aReleasedParkedKeyNoLongerShowsParked() throws Exception {
    var ds = DB.dataSource();
    ConsoleFixtures.parked(ds, "stock", "k-release");
    assertThat(state(page(get("/held")), "k-release")).isEqualTo("blocked by a dead letter");
    mvc.perform(
            post("/actions/parked/release")
                .param("consumer", "stock")
                .param("key", "k-release")
                .with(user("olivia").roles("OPERATOR"))
                .with(csrf()))
        .andExpect(status().isFound());
    String after = page(get("/held"));
    assertThat(state(after, "k-release")).isEqualTo("due now: the consumer retries it next");
    assertThat(state(page(get("/")), "k-release"))
        .isEqualTo("due now: the consumer retries it next");
  }

  /** The state cell of the parked key's row. */
  private static String state(String page, String key) {
    Matcher row =
        Pattern.compile(
                "<tr[^>]*>(?:(?!</tr>).)*>" + Pattern.quote(key) + "<(?:(?!</tr>).)*</tr>",
                Pattern.DOTALL)
            .matcher(page);
    List<String> states = new java.util.ArrayList<>();
    while (row.find()) {
      Matcher cell = Pattern.compile("class=\"state\">([^<]*)<").matcher(row.group());
      if (cell.find()) {
        states.add(cell.group(1));
      }
    }
    assertThat(states).as("rows of key " + key).hasSize(1);
    return states.get(0);
  }
}
