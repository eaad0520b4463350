package dev.postbox.cli;

import dev.postbox.admin.AuditEntry;
import dev.postbox.admin.AuditFilter;
import dev.postbox.admin.DeadLetterDetail;
import dev.postbox.admin.DeadLetterGroup;
import dev.postbox.admin.DeadLetterSummary;
import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import java.io.PrintStream;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** The read commands of {@code postbox dlq}: list, groups, show, audit. Read-only. */
final class DlqReadCommands {

  private DlqReadCommands() {}

  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      description = {
        "Lists dead letters, newest first, filtered; pages with --limit and --after.",
        "Exit code: 0 some found, 4 none."
      })
  static final class ListLetters implements Callable<Integer> {
    @Mixin AdminOptions db = new AdminOptions();
    @Mixin FilterOptions filters = new FilterOptions();

    @Option(names = "--json", description = "Print JSON: {items: [...], next: cursor|null}.")
    boolean json;

    @Override
    public Integer call() {
      var filter = filters.filter(); // bad options are usage errors before any connection
      var request = filters.page();
      Page<DeadLetterSummary> page = db.admin().deadLetters(filter, request);
      PrintStream out = System.out;
      if (json) {
        Json.print(page, out);
      } else {
        out.printf(
            "%-8s %-24s %-14s %-16s %-12s %-28s %-9s %s%n",
            "ID", "FIRST FAILURE", "CONSUMER", "TOPIC", "KEY", "ERROR", "STATUS", "MESSAGE ID");
        for (DeadLetterSummary d : page.items()) {
          out.printf(
              "%-8d %-24s %-14s %-16s %-12s %-28s %-9s %s%n",
              d.id(),
              d.firstFailure(),
              d.consumer(),
              d.topic(),
              d.key().orElse("-"),
              shortClass(d.errorClass()),
              d.status(),
              d.messageId().map(Object::toString).orElse("-"));
        }
        next(page, out);
      }
      return page.items().isEmpty() ? ExitCodes.NOT_FOUND : ExitCodes.OK;
    }
  }

  @Command(
      name = "groups",
      mixinStandardHelpOptions = true,
      description = {
        "Dead letters grouped by failure fingerprint (error class, message, topic): count, first"
            + " and last seen, consumers; newest first.",
        "Exit code: 0 some found, 4 none."
      })
  static final class Groups implements Callable<Integer> {
    @Mixin AdminOptions db = new AdminOptions();
    @Mixin FilterOptions filters = new FilterOptions();

    @Option(names = "--json", description = "Print JSON: {items: [...], next: cursor|null}.")
    boolean json;

    @Override
    public Integer call() {
      var filter = filters.filter(); // bad options are usage errors before any connection
      var request = filters.page();
      Page<DeadLetterGroup> page = db.admin().groups(filter, request);
      PrintStream out = System.out;
      if (json) {
        Json.print(page, out);
      } else {
        for (DeadLetterGroup g : page.items()) {
          out.printf(
              "%6d letters (%d pending)  %s .. %s  %s  consumers %s%n  group %s%n  e.g. #%d: %s%n",
              g.count(),
              g.pending(),
              g.firstSeen(),
              g.lastSeen(),
              g.errorClass(),
              String.join(",", g.consumers()),
              g.fingerprint(),
              g.sampleId(),
              g.sampleError().orElse(""));
        }
        next(page, out);
      }
      return page.items().isEmpty() ? ExitCodes.NOT_FOUND : ExitCodes.OK;
    }
  }

  @Command(
      name = "show",
      mixinStandardHelpOptions = true,
      description = {
        "One dead letter: where it was read, the error and stack trace, headers, payload, its"
            + " history, the operator actions on it and its message's trace.",
        "Exit code: 0 found, 4 no such letter."
      })
  static final class Show implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "ID", description = "The dead letter's id.")
    long id;

    @Mixin AdminOptions db = new AdminOptions();

    @Option(names = "--json", description = "Print JSON (payload as base64 and as payload_text).")
    boolean json;

    @Override
    public Integer call() throws Exception {
      Optional<DeadLetterDetail> found = db.admin().deadLetter(id);
      if (found.isEmpty()) {
        System.err.println("postbox dlq show: no dead letter " + id);
        return ExitCodes.NOT_FOUND;
      }
      DeadLetterDetail d = found.get();
      PrintStream out = System.out;
      if (json) {
        Json.print(d, out);
        return ExitCodes.OK;
      }
      DeadLetterSummary s = d.summary();
      out.printf("dead letter %d  %s (replayed %d times)%n", s.id(), s.status(), s.replays());
      out.printf(
          "  message     %s  type %s%n",
          s.messageId().map(Object::toString).orElse("-"), s.type().orElse("-"));
      out.printf(
          "  consumer    %s  read from %s-%d@%d  key %s  tenant %s%n",
          s.consumer(),
          s.topic(),
          s.partition(),
          s.offset(),
          s.key().orElse("-"),
          s.tenant().orElse("-"));
      out.printf(
          "  failed      %s .. %s, %d attempts, %s%n",
          s.firstFailure(), s.lastFailure(), s.attempts(), s.classification());
      out.printf("  error       %s: %s%n", s.errorClass(), s.errorMessage().orElse(""));
      out.printf("  group       %s%n", s.fingerprint());
      out.println("headers");
      for (DeadLetterDetail.Header h : d.headers()) {
        out.printf("  %s: %s%s%n", h.name(), h.value(), h.base64() ? " (base64)" : "");
      }
      out.println("payload" + d.contentType().map(c -> " (" + c + ")").orElse(""));
      out.println("  " + d.payloadText().orElse("(" + d.payload().length + " bytes, not text)"));
      d.stackTrace()
          .ifPresent(t -> {
            out.println("stack trace");
            t.lines().limit(30).forEach(l -> out.println("  " + l));
          });
      out.println("history (this message, this consumer)");
      for (DeadLetterDetail.Attempt a : d.history()) {
        out.printf(
            "  #%d %s .. %s, %d attempts, %s%s%n",
            a.deadLetterId(),
            a.firstFailure(),
            a.lastFailure(),
            a.attempts(),
            a.status(),
            a.resolvedBy()
                .map(b -> " by " + b + a.reason().map(r -> " (" + r + ")").orElse(""))
                .orElse(""));
      }
      if (!d.audit().isEmpty()) {
        out.println("operator actions");
        d.audit().forEach(a -> audit(a, out));
      }
      d.trace()
          .ifPresent(t -> {
            out.println("trace");
            TraceOutput.print(t, out);
          });
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "audit",
      mixinStandardHelpOptions = true,
      description = {
        "The operator actions (replays, edits, discards, parked keys released or skipped,"
            + " blocked outbox rows retried or skipped), newest first.",
        "Exit code: 0 some found, 4 none."
      })
  static final class Audit implements Callable<Integer> {
    @Mixin AdminOptions db = new AdminOptions();

    @Option(names = "--actor", description = "Only this operator's actions.")
    String actor;

    @Option(names = "--action", description = "Only this action (REPLAY, EDIT, DISCARD, ...).")
    String action;

    @Option(names = "--dead-letter", description = "Only actions on this dead letter.")
    Long deadLetter;

    @Option(names = "--limit", defaultValue = "50", description = "Items per page.")
    int limit;

    @Option(names = "--after", description = "The cursor printed under the previous page.")
    String after;

    @Option(names = "--json", description = "Print JSON: {items: [...], next: cursor|null}.")
    boolean json;

    @Override
    public Integer call() {
      AuditFilter f =
          new AuditFilter(
              Optional.ofNullable(actor),
              Optional.ofNullable(action),
              Optional.ofNullable(deadLetter),
              Optional.empty(),
              Optional.empty(),
              Optional.empty());
      Page<AuditEntry> page =
          db.admin().audit(f, new PageRequest(limit, Optional.ofNullable(after)));
      if (json) {
        Json.print(page, System.out);
      } else {
        page.items().forEach(a -> audit(a, System.out));
        next(page, System.out);
      }
      return page.items().isEmpty() ? ExitCodes.NOT_FOUND : ExitCodes.OK;
    }
  }

  static void audit(AuditEntry a, PrintStream out) {
    out.printf(
        "  %s  %-14s %-15s %s%s%s%n",
        a.at(),
        a.actor(),
        a.action(),
        a.what(),
        a.newMessageId().map(id -> " -> copy " + id).orElse(""),
        a.reason().map(r -> " (" + r + ")").orElse(""));
  }

  static void next(Page<?> page, PrintStream out) {
    page.next().ifPresent(c -> out.println("more: --after " + c));
  }

  static String shortClass(String name) {
    int dot = name.lastIndexOf('.');
    return dot < 0 ? name : name.substring(dot + 1);
  }
}
