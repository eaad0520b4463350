package dev.postbox.console;

import dev.postbox.admin.DeadLetterDetail;
import dev.postbox.admin.DeadLetterGroup;
import dev.postbox.admin.DeadLetterSummary;
import dev.postbox.admin.FailedOutboxRow;
import dev.postbox.admin.Page;
import dev.postbox.admin.ParkedKey;
import dev.postbox.jdbc.MessageTrace;
import dev.postbox.jdbc.OutboxOperations;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.UnaryOperator;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.GrantedAuthority;

/**
 * The masking policy: what a user without the {@value #REVEAL} permission sees of the data Postbox
 * keeps about failures, which can carry personal data. Every page and the JSON API pass what they
 * show through one of these, so a user without the permission never gets the text: a payload is its
 * size and content type ("412 bytes, application/json, hidden"), a header keeps its name and loses
 * its value, an error message becomes "message hidden" beside its exception class (an error without
 * a class, such as a relay's or a parked key's last error, "error hidden"), a stack trace is
 * hidden, and a trace step keeps only its recorded values that carry no data (topic, offsets,
 * attempts, status...). With the permission the values pass unchanged; a payload is still shown
 * only through the audited reveal action.
 */
final class Masking {

  /** The authority that lets a user see unmasked error messages, headers and stack traces. */
  static final String REVEAL = "REVEAL";

  static final String HIDDEN = "hidden";
  static final String MESSAGE_HIDDEN = "message hidden";
  static final String ERROR_HIDDEN = "error hidden";
  static final String STACK_TRACE_HIDDEN = "stack trace hidden";

  /**
   * Trace attributes that carry no message data, shown to everyone; any other one (error, last
   * error, stored result, what a row waits behind, and any added later) is hidden.
   */
  private static final Set<String> TRACE_SAFE =
      Set.of(
          "topic",
          "key",
          "type",
          "schema_version",
          "correlation_id",
          "lane",
          "traceparent",
          "partition",
          "offset",
          "failed_attempts_before",
          "attempts",
          "hold",
          "position",
          "by",
          "reason",
          "dead_letter_id",
          "classification",
          "last_failure",
          "status",
          "replays",
          "due_at",
          "reply_id",
          "stored_result_content_type");

  private static final Masking REVEALING = new Masking(true);
  private static final Masking MASKING = new Masking(false);

  private final boolean reveals;

  private Masking(boolean reveals) {
    this.reveals = reveals;
  }

  /** The policy for {@code who}: unmasked if they hold {@value #REVEAL}. */
  static Masking of(Authentication who) {
    return who != null && holdsReveal(who) ? REVEALING : MASKING;
  }

  private static boolean holdsReveal(Authentication who) {
    for (GrantedAuthority a : who.getAuthorities()) {
      if (REVEAL.equals(a.getAuthority())) {
        return true;
      }
    }
    return false;
  }

  /** Whether the values pass unmasked. */
  boolean reveals() {
    return reveals;
  }

  /** A payload as its size and content type, e.g. "412 bytes, application/json, hidden". */
  static String payload(int size, Optional<String> contentType) {
    return size + " bytes" + contentType.map(t -> ", " + t).orElse("") + ", " + HIDDEN;
  }

  <T> Page<T> page(Page<T> page, UnaryOperator<T> mask) {
    return reveals ? page : new Page<>(list(page.items(), mask), page.next());
  }

  <T> List<T> list(List<T> items, UnaryOperator<T> mask) {
    return reveals ? items : items.stream().map(mask).toList();
  }

  DeadLetterSummary summary(DeadLetterSummary s) {
    if (reveals) {
      return s;
    }
    return new DeadLetterSummary(
        s.id(),
        s.consumer(),
        s.topic(),
        s.partition(),
        s.offset(),
        s.messageId(),
        s.type(),
        s.key(),
        s.tenant(),
        s.classification(),
        s.errorClass(),
        s.errorMessage().map(m -> MESSAGE_HIDDEN),
        s.fingerprint(),
        s.attempts(),
        s.firstFailure(),
        s.lastFailure(),
        s.status(),
        s.replays());
  }

  DeadLetterGroup group(DeadLetterGroup g) {
    if (reveals) {
      return g;
    }
    return new DeadLetterGroup(
        g.fingerprint(),
        g.count(),
        g.pending(),
        g.firstSeen(),
        g.lastSeen(),
        g.consumers(),
        g.errorClass(),
        g.topic(),
        g.sampleError().map(m -> MESSAGE_HIDDEN),
        g.sampleId());
  }

  ParkedKey parked(ParkedKey k) {
    if (reveals) {
      return k;
    }
    return new ParkedKey(
        k.consumer(),
        k.key(),
        k.messages(),
        k.headTopic(),
        k.headPartition(),
        k.headOffset(),
        k.attempts(),
        k.dueAt(),
        k.due(),
        k.blocked(),
        k.leased(),
        k.lastError().map(e -> ERROR_HIDDEN),
        k.parkedAt());
  }

  FailedOutboxRow failed(FailedOutboxRow f) {
    if (reveals) {
      return f;
    }
    return new FailedOutboxRow(
        f.position(),
        f.messageId(),
        f.topic(),
        f.key(),
        f.type(),
        f.failedAt(),
        f.attempts(),
        f.error().map(e -> ERROR_HIDDEN),
        f.hold());
  }

  OutboxOperations.HoldingRow holding(OutboxOperations.HoldingRow h) {
    if (reveals) {
      return h;
    }
    return new OutboxOperations.HoldingRow(
        h.position(),
        h.messageId(),
        h.topic(),
        h.key(),
        h.lane(),
        h.hold(),
        h.failedAt(),
        h.attempts(),
        ERROR_HIDDEN,
        h.heldRows(),
        h.heldKeys());
  }

  /**
   * A letter's detail: headers without values, no payload bytes (the page shows {@link #payload}
   * from the original's size), the stack trace and every error message hidden, the trace masked.
   */
  DeadLetterDetail detail(DeadLetterDetail d) {
    if (reveals) {
      return d;
    }
    return new DeadLetterDetail(
        summary(d.summary()),
        d.headers().stream()
            .map(h -> new DeadLetterDetail.Header(h.name(), HIDDEN, false))
            .toList(),
        new byte[0],
        Optional.empty(),
        d.contentType(),
        d.stackTrace().map(t -> STACK_TRACE_HIDDEN),
        d.history().stream().map(Masking::attempt).toList(),
        d.audit(),
        d.trace().map(this::trace));
  }

  private static DeadLetterDetail.Attempt attempt(DeadLetterDetail.Attempt a) {
    return new DeadLetterDetail.Attempt(
        a.deadLetterId(),
        a.attempts(),
        a.firstFailure(),
        a.lastFailure(),
        a.errorClass(),
        a.errorMessage().map(m -> MESSAGE_HIDDEN),
        a.status(),
        a.resolvedAt(),
        a.resolvedBy(),
        a.reason());
  }

  /**
   * A trace whose steps keep only their safe values: the one-line detail (which quotes errors and
   * stored results) is rebuilt from them, naming what was hidden.
   */
  MessageTrace trace(MessageTrace t) {
    if (reveals) {
      return t;
    }
    List<MessageTrace.Step> steps = new ArrayList<>();
    for (MessageTrace.Step s : t.steps()) {
      Map<String, String> kept = new LinkedHashMap<>();
      List<String> hidden = new ArrayList<>();
      s.attributes().entrySet().stream()
          .sorted(Map.Entry.comparingByKey())
          .forEach(e -> {
            if (TRACE_SAFE.contains(e.getKey())) {
              kept.put(e.getKey(), e.getValue());
            } else {
              hidden.add(e.getKey());
            }
          });
      StringBuilder detail = new StringBuilder(s.step());
      kept.forEach((k, v) ->
          detail
              .append(detail.length() == s.step().length() ? ": " : ", ")
              .append(k)
              .append('=')
              .append(v));
      if (!hidden.isEmpty()) {
        detail
            .append(" (")
            .append(String.join(", ", hidden))
            .append(' ')
            .append(HIDDEN)
            .append(')');
      }
      steps.add(new MessageTrace.Step(s.at(), s.step(), s.by(), detail.toString(), kept));
    }
    return new MessageTrace(t.messageId(), steps, t.notes());
  }
}
