package dev.postbox.cli;

import dev.postbox.admin.FailedOutboxRow;
import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import dev.postbox.jdbc.OperationsProbe;
import dev.postbox.jdbc.OutboxOperations;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code postbox outbox}: the backlog and the rows the relay cannot publish. */
@Command(
    name = "outbox",
    mixinStandardHelpOptions = true,
    description = "The outbox: backlog and its age, rows that block their key, unblocking them.",
    subcommands = {
      OutboxCommand.Status.class,
      OutboxCommand.Blocked.class,
      OutboxCommand.Unblock.class
    })
final class OutboxCommand implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  @Command(
      name = "status",
      mixinStandardHelpOptions = true,
      description = {
        "Pending rows and the age of the oldest (relay lag), failed and blocking rows, pending"
            + " dead letters and parked keys with their oldest ages.",
        "Exit code: 0."
      })
  static final class Status implements Callable<Integer> {
    @Mixin AdminOptions db = new AdminOptions();

    @Option(names = "--json", description = "Print JSON (ages in seconds).")
    boolean json;

    @Override
    public Integer call() {
      OperationsProbe.Snapshot s = db.admin().outboxStatus();
      if (json) {
        Json.print(s, System.out);
        return ExitCodes.OK;
      }
      System.out.printf(
          "outbox pending      %d, oldest %s%s%n",
          s.outboxPending(), age(s.outboxOldestPendingAge()), s.outboxStuck() ? "  STUCK" : "");
      System.out.printf(
          "outbox failed       %d (%d blocking their key or topic, %d rows held)%n",
          s.outboxFailed(), s.outboxHolding(), s.outboxHeld());
      System.out.printf(
          "dead letters        %d pending, oldest %s%n",
          s.deadLettersPending(), age(s.deadLettersOldestAge()));
      System.out.printf(
          "parked              %d keys, %d messages, oldest %s%n",
          s.parkedKeys(), s.parkedMessages(), age(s.parkedOldestAge()));
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "blocked",
      mixinStandardHelpOptions = true,
      description = {
        "Rows the relay cannot publish that hold the later rows of their key (or topic), with the"
            + " reason and what waits; then the other failed rows.",
        "Exit code: 0 some blocked, 4 none."
      })
  static final class Blocked implements Callable<Integer> {
    @Mixin AdminOptions db = new AdminOptions();

    @Option(names = "--json", description = "Print JSON: {blocked: [...], failed: {items, next}}.")
    boolean json;

    @Override
    public Integer call() {
      var admin = db.admin();
      List<OutboxOperations.HoldingRow> blocked = admin.blockedOutboxRows();
      Page<FailedOutboxRow> failed = admin.failedOutboxRows(PageRequest.first(50));
      if (json) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("blocked", blocked);
        out.put("failed", failed);
        Json.print(out, System.out);
      } else {
        for (OutboxOperations.HoldingRow r : blocked) {
          System.out.printf(
              "position %d  %s key %s  holds %s: %d rows of %d keys wait  failed %s after %d"
                  + " attempts%n  message %s  error: %s%n",
              r.position(),
              r.topic(),
              r.key().orElse("-"),
              r.hold(),
              r.heldRows(),
              r.heldKeys(),
              r.failedAt(),
              r.attempts(),
              r.messageId(),
              r.error());
        }
        long others = failed.items().stream().filter(f -> f.hold().isEmpty()).count();
        if (others > 0) {
          System.out.println(
              others
                  + " other failed row(s) hold nothing (skipped or failed"
                  + " before migration V9): --json lists them");
        }
      }
      return blocked.isEmpty() ? ExitCodes.NOT_FOUND : ExitCodes.OK;
    }
  }

  @Command(
      name = "unblock",
      mixinStandardHelpOptions = true,
      description = {
        "Resolves a blocked row: --retry publishes it again first, then the rows it held, in order"
            + " (after fixing the cause); --skip leaves it unpublished for good and lets the rest"
            + " go on. Audited.",
        "Exit code: 0 done, 3 not confirmed, 4 no row at that position blocks."
      })
  static final class Unblock implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "POSITION")
    long position;

    @Option(names = "--retry", description = "Publish it again.")
    boolean retry;

    @Option(names = "--skip", description = "Never publish it (needs --reason).")
    boolean skip;

    @Option(names = "--reason", description = "Why (required with --skip).")
    String reason;

    @Mixin AdminOptions db = new AdminOptions();
    @Mixin Confirmation confirm = new Confirmation();
    @Mixin ActorOption actor = new ActorOption();

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      if (retry == skip || (skip && reason == null)) {
        throw new CommandLine.ParameterException(
            spec.commandLine(), "give either --retry or --skip --reason R");
      }
      if (!confirm.confirmed((retry ? "retry" : "skip") + " outbox row " + position)) {
        return ExitCodes.NOT_CONFIRMED;
      }
      var ops = db.admin().as(actor.actor);
      boolean done = retry ? ops.retryBlocked(position) : ops.skipBlocked(position, reason);
      if (!done) {
        System.err.println("postbox outbox unblock: no row at position " + position + " blocks");
        return ExitCodes.NOT_FOUND;
      }
      System.out.println((retry ? "retried" : "skipped") + " outbox row " + position);
      return ExitCodes.OK;
    }
  }

  static String age(java.time.Duration d) {
    return d.isZero() ? "-" : d.toMillis() / 1000.0 + " s";
  }
}
