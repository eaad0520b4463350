package dev.postbox.console;

import dev.postbox.admin.DeadLetterDetail;
import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.DeadLetterSummary;
import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.jdbc.OperationsProbe;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import org.springframework.security.core.Authentication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A small read-only JSON API for scripts and monitors, behind the same login (401 without a
 * session), masked as the pages are ({@link Masking}). Payloads are never part of it (only their
 * size and content type): a payload is shown only through the page's audited reveal.
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
      @RequestParam(required = false) String key,
      @RequestParam(required = false) String after,
      Authentication who) {
    Masking masking = Masking.of(who);
    return masking.page(
        admin.deadLetters(
            DeadLetterFilter.builder().consumer(consumer).key(key).build(),
            new PageRequest(PageRequest.DEFAULT_LIMIT, Web.text(after))),
        masking::summary);
  }

  /**
   * One dead letter for a script: its summary, headers, stack trace and attempt history (masked
   * unless the caller holds the reveal permission) and its payload's size and content type.
   *
   * @param payload the payload as its size and content type, always ("412 bytes, application/json,
   *     hidden")
   */
  record DeadLetterJson(
      DeadLetterSummary summary,
      List<DeadLetterDetail.Header> headers,
      String payload,
      int payloadBytes,
      Optional<String> contentType,
      Optional<String> stackTrace,
      List<DeadLetterDetail.Attempt> history) {}

  @GetMapping("/dead-letters/{id}")
  DeadLetterJson deadLetter(@PathVariable long id, Authentication who) {
    DeadLetterDetail original =
        admin.deadLetter(id).orElseThrow(() -> new NoSuchElementException("no dead letter " + id));
    DeadLetterDetail d = Masking.of(who).detail(original);
    int size = original.payload().length;
    return new DeadLetterJson(
        d.summary(),
        d.headers(),
        Masking.payload(size, original.contentType()),
        size,
        d.contentType(),
        d.stackTrace(),
        d.history());
  }

  /** The replay jobs, newest first (their progress, for a script that follows one). */
  @GetMapping("/replay-jobs")
  Page<dev.postbox.admin.ReplayJob> replayJobs(@RequestParam(required = false) String after) {
    return admin.replayJobs(new PageRequest(PageRequest.DEFAULT_LIMIT, Web.text(after)));
  }

  /** One replay job's state and progress. */
  @GetMapping("/replay-jobs/{id}")
  dev.postbox.admin.ReplayJob replayJob(@PathVariable long id) {
    return admin.replayJob(id).orElseThrow(() -> new NoSuchElementException("no replay job " + id));
  }
}
