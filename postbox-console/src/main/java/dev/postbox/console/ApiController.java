package dev.postbox.console;

import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.DeadLetterSummary;
import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.jdbc.OperationsProbe;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A small read-only JSON API for scripts and monitors, behind the same login (401 without a
 * session). Payloads are never part of it.
 */
@RestController
@RequestMapping("/api")
class ApiController {

  private final PostboxAdmin admin;

  ApiController(PostboxAdmin admin) {
    this.admin = admin;
  }

  @GetMapping("/overview")
  Map<String, Object> overview() {
    OperationsProbe.Snapshot s = admin.outboxStatus();
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("outbox_pending", s.outboxPending());
    m.put("outbox_oldest_pending_age_seconds", s.outboxOldestPendingAge().toSeconds());
    m.put("outbox_failed", s.outboxFailed());
    m.put("outbox_holding", s.outboxHolding());
    m.put("dead_letters_pending", s.deadLettersPending());
    m.put("dead_letters_oldest_age_seconds", s.deadLettersOldestAge().toSeconds());
    m.put("parked_keys", s.parkedKeys());
    m.put("parked_messages", s.parkedMessages());
    return m;
  }

  @GetMapping("/dead-letters")
  Page<DeadLetterSummary> deadLetters(
      @RequestParam(required = false) String consumer,
      @RequestParam(required = false) String after) {
    return admin.deadLetters(
        DeadLetterFilter.builder().consumer(consumer).build(),
        new PageRequest(PageRequest.DEFAULT_LIMIT, Web.text(after)));
  }
}
