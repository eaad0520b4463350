package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.csrf;
import static org.springframework.security.test.web.servlet.request.SecurityMockMvcRequestPostProcessors.user;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.postbox.admin.PostboxAdmin;
import dev.postbox.admin.ReplayJob;
import dev.postbox.admin.ReplayJobRunner;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;
import org.springframework.test.web.servlet.request.RequestPostProcessor;

/**
 * The replay job pages on the test kit's PostgreSQL: the preview of a group (count, topics,
 * consumers, a masked sample), a start refused without a reason or with a wrong count (400, the
 * preview again, escaped), a job started by an ADMIN only (CSRF and role checked), its page with
 * progress worked by a runner the test steps, pause, resume and cancel, the list, and the audit.
 * The console's own background runner is off here, so the progress is the test's to make.
 */
@SpringBootTest(classes = ConsoleApplication.class)
@AutoConfigureMockMvc
class ConsoleReplayJobsIT {

  static final ConsoleTestDatabase DB = new ConsoleTestDatabase("console-replay-jobs");

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    DB.register(registry);
    registry.add("postbox.console.replay-jobs.run", () -> "false");
    registry.add("postbox.console.replay-jobs.confirm-above", () -> "3");
  }

  @Autowired MockMvc mvc;
  @Autowired PostboxAdmin admin;

  private static RequestPostProcessor operator() {
    return user("olivia").roles("OPERATOR");
  }

  private static RequestPostProcessor admin() {
    return user("admin").roles("ADMIN");
  }

  private static final String ERROR = "no warehouse <b>#</b>";

  @Test
  void previewConfirmStartFollowPauseResumeAndCancel() throws Exception {
    var ds = DB.dataSource();
    for (int i = 0; i < 5; i++) {
      ConsoleFixtures.deadLetter(
          ds,
          i < 3 ? "shipping" : "billing",
          ConsoleFixtures.order("orders", "o-" + i, "{\"secret\":\"card-4111\"}"),
          "no warehouse <b>" + i + "</b>",
          "fp-warehouse");
    }
    int before = ConsoleFixtures.audit(ds).size();

    String preview = page(get("/replay-jobs/preview").param("fingerprint", "fp-warehouse"), 200);
    assertThat(preview)
        .contains("id=\"preview-count\">5<")
        .contains("billing, shipping")
        .contains("id=\"confirm-word\">5<")
        .doesNotContain("card-4111")
        .doesNotContain("<b>")
        .doesNotContain("no warehouse &lt;b&gt;"); // the error message is masked without reveal
    assertThat(page(get("/replay-jobs/preview").param("fingerprint", "fp-warehouse"), operator()))
        .as("the start form is an ADMIN's")
        .doesNotContain("start-job");

    // refused starts: no reason, no count, a wrong count; the preview again, nothing done
    String refused = start(post("/actions/replay-jobs").param("fingerprint", "fp-warehouse"), 400);
    assertThat(refused).contains("give a reason").contains("id=\"preview-count\">5<");
    assertThat(
            start(
                post("/actions/replay-jobs")
                    .param("fingerprint", "fp-warehouse")
                    .param("reason", "warehouse <fixed>"),
                400))
        .contains("typing their count, 5")
        .contains("value=\"warehouse &lt;fixed&gt;\"");
    assertThat(
            start(
                post("/actions/replay-jobs")
                    .param("fingerprint", "fp-warehouse")
                    .param("reason", "warehouse fixed")
                    .param("confirmation", "4"),
                400))
        .contains("covers 5 letters now, not 4");
    mvc.perform(
            post("/actions/replay-jobs")
                .param("fingerprint", "fp-warehouse")
                .param("reason", "warehouse fixed")
                .param("confirmation", "5")
                .with(operator())
                .with(csrf()))
        .andExpect(status().isForbidden());
    mvc.perform(
            post("/actions/replay-jobs")
                .param("fingerprint", "fp-warehouse")
                .param("reason", "warehouse fixed")
                .param("confirmation", "5")
                .with(admin()))
        .andExpect(status().isForbidden()); // no CSRF token
    assertThat(admin.replayJobs(dev.postbox.admin.PageRequest.first(5)).items()).isEmpty();

    MvcResult started =
        mvc.perform(
                post("/actions/replay-jobs")
                    .param("fingerprint", "fp-warehouse")
                    .param("reason", "warehouse fixed")
                    .param("confirmation", "5")
                    .with(admin())
                    .with(csrf()))
            .andExpect(status().isFound())
            .andReturn();
    String location = started.getResponse().getRedirectedUrl();
    assertThat(location).startsWith("/replay-jobs/");
    long id = Long.parseLong(location.substring("/replay-jobs/".length()));

    ReplayJobRunner runner = admin.replayJobRunner("test-runner", Duration.ofSeconds(1));
    runner.step();
    runner.step();
    String job = page(get(location), 200);
    assertThat(job)
        .contains("id=\"job-state\">RUNNING<")
        .contains("id=\"job-done\">2 of 5<")
        .contains("id=\"job-replayed\">2<")
        .contains("id=\"refresh\"")
        .contains("pause-job")
        .contains("cancel-job");

    mvc.perform(
            post(location.replace("/replay-jobs/", "/actions/replay-jobs/") + "/pause")
                .with(operator())
                .with(csrf()))
        .andExpect(status().isForbidden());
    action(id, "pause");
    assertThat(page(get(location), 200))
        .contains("id=\"job-state\">PAUSED<")
        .contains("resume-job")
        .doesNotContain("id=\"refresh\"");
    mvc.perform(post("/actions/replay-jobs/" + id + "/pause").with(admin()).with(csrf()))
        .andExpect(status().isConflict());
    action(id, "resume");
    runner.step();
    action(id, "cancel");
    runner.step();
    String cancelled = page(get(location), 200);
    assertThat(cancelled)
        .contains("id=\"job-state\">CANCELLED<")
        .contains("id=\"job-done\">3 of 5<")
        .contains("id=\"job-not-worked\">2<")
        .doesNotContain("cancel-job");
    // the running page's reload stops once Pause or Cancel is submitted (a reload would abort it)
    assertThat(page(get("/js/console.js"), 200))
        .contains("document.addEventListener(\"submit\"")
        .contains("window.clearTimeout(timer)");
    assertThat(admin.replayJob(id).orElseThrow().state()).isEqualTo(ReplayJob.State.CANCELLED);

    assertThat(page(get("/replay-jobs"), 200)).contains("id=\"job-" + id + "\"").contains("3 / 5");
    String json =
        mvc.perform(get("/api/replay-jobs/" + id).with(user("victor").roles("VIEWER")))
            .andExpect(status().isOk())
            .andReturn()
            .getResponse()
            .getContentAsString();
    assertThat(json).contains("\"state\":\"CANCELLED\"").contains("\"total\":5");
    mvc.perform(get("/api/replay-jobs").with(user("victor").roles("VIEWER")))
        .andExpect(status().isOk());
    mvc.perform(get("/replay-jobs/999999").with(admin())).andExpect(status().isNotFound());
    List<String> rows = ConsoleFixtures.audit(ds);
    assertThat(rows.subList(before, rows.size()))
        .containsExactly("admin|REPLAY_JOB", "admin|REPLAY", "admin|REPLAY", "admin|REPLAY");
    assertThat(
            ConsoleFixtures.query(
                ds, "SELECT count(*) FROM postbox_dead_letter WHERE status = 'PENDING'"))
        .containsExactly("2");
  }

  private String page(
      org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder request,
      RequestPostProcessor who)
      throws Exception {
    return mvc.perform(request.with(who))
        .andExpect(status().isOk())
        .andReturn()
        .getResponse()
        .getContentAsString();
  }

  private String page(
      org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder request,
      int expected)
      throws Exception {
    return mvc.perform(request.with(admin()))
        .andExpect(status().is(expected))
        .andReturn()
        .getResponse()
        .getContentAsString();
  }

  private String start(
      org.springframework.test.web.servlet.request.MockHttpServletRequestBuilder request,
      int expected)
      throws Exception {
    return page(request.with(csrf()), expected);
  }

  private void action(long id, String what) throws Exception {
    mvc.perform(post("/actions/replay-jobs/" + id + "/" + what).with(admin()).with(csrf()))
        .andExpect(status().isFound());
  }
}
