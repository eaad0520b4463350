package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import dev.postbox.core.Message;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.security.core.authority.SimpleGrantedAuthority;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.request.RequestPostProcessor;

/**
 * Edit-and-retry checks the body against the content type: invalid JSON for a JSON message is
 * refused with 400 and the form keeps what was typed; nothing is written or audited.
 */
@SpringBootTest(classes = ConsoleApplication.class)
@AutoConfigureMockMvc
class ConsoleEditIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-edit");

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    DB.register(registry);
  }

  @Autowired MockMvc mvc;

  private static final RequestPostProcessor OPERATOR_WHO_REVEALS =
      user("olivia")
          .authorities(
              new SimpleGrantedAuthority("ROLE_OPERATOR"),
              new SimpleGrantedAuthority(Masking.REVEAL));

  private MockHttpServletResponse edit(
      long id, String payload, String contentType, RequestPostProcessor who) throws Exception {
    var request =
        post("/actions/dead-letters/" + id + "/edit")
            .param("payload", payload)
            .param("reason", "sku added")
            .with(who)
            .with(csrf());
    if (contentType != null) {
      request.param("contentType", contentType);
    }
    return mvc.perform(request).andReturn().getResponse();
  }

  private static String writtenCopies(Message m) {
    return ConsoleFixtures.query(
            DB.dataSource(),
            "SELECT count(*) FROM postbox_outbox WHERE causation_id = '" + m.id() + "'")
        .get(0);
  }

  @Test
  void invalidJsonForAJsonMessageIs400WithTheFormKeptAndNothingWritten() throws Exception {
    Message m = ConsoleFixtures.order("orders", "e-1", "{\"order\":1,\"secret\":\"s-77\"}");
    long id = ConsoleFixtures.deadLetter(DB.dataSource(), "shipping", m, "no sku");
    for (String bad : new String[] {"{\"order\":1,", "{\"order\":1} trailing", "", "nope"}) {
      MockHttpServletResponse r = edit(id, bad, null, OPERATOR_WHO_REVEALS);
      assertThat(r.getStatus()).as(bad).isEqualTo(400);
      String page = r.getContentAsString(StandardCharsets.UTF_8);
      assertThat(page)
          .contains("id=\"edit-error\"", "not valid JSON (application/json)")
          .contains("value=\"sku added\"")
          .as("the original payload is not shown again without a reveal")
          .doesNotContain("s-77");
      assertThat(page).contains(">" + bad.replace("\"", "&quot;") + "</textarea>");
    }
    // a content type given with the form counts: application/problem+json is JSON too
    assertThat(edit(id, "{", "application/problem+json", OPERATOR_WHO_REVEALS).getStatus())
        .isEqualTo(400);
    // an operator without the reveal permission gets the same 400 (it shows only their text)
    assertThat(edit(id, "{", null, user("otto").roles("OPERATOR")).getStatus()).isEqualTo(400);
    assertThat(writtenCopies(m)).isEqualTo("0");
    assertThat(ConsoleFixtures.audit(DB.dataSource())).noneMatch(a -> a.endsWith("|EDIT"));
    assertThat(
            ConsoleFixtures.query(
                DB.dataSource(), "SELECT status FROM postbox_dead_letter WHERE id = " + id))
        .containsExactly("PENDING");

    MockHttpServletResponse ok =
        edit(id, "{\"order\":1,\"sku\":\"S-1\"}", null, OPERATOR_WHO_REVEALS);
    assertThat(ok.getStatus()).isEqualTo(302);
    assertThat(writtenCopies(m)).isEqualTo("1");
  }

  @Test
  void aBodyOfAnotherContentTypeIsTakenAsGiven() throws Exception {
    Message m = ConsoleFixtures.order("orders", "e-2", "{\"order\":2}");
    long id = ConsoleFixtures.deadLetter(DB.dataSource(), "shipping", m, "no sku");
    assertThat(edit(id, "order=2, not json", "text/plain", OPERATOR_WHO_REVEALS).getStatus())
        .isEqualTo(302);
    assertThat(writtenCopies(m)).isEqualTo("1");
  }
}
