package dev.postbox.cli;

import dev.postbox.admin.DeadLetterSummary;
import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.admin.ReplayJob;
import dev.postbox.admin.ReplayJobRunner;
import dev.postbox.admin.ReplayPreview;
import dev.postbox.admin.ReplaySelection;
import dev.postbox.jdbc.ReplayRoute;
import dev.postbox.jdbc.Replayer;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code postbox dlq replay-job}: bulk replays as background jobs (preview, start, status, list,
 * pause, resume, cancel, run), the same jobs the web console shows and works.
 */
@Command(
    name = "replay-job",
    mixinStandardHelpOptions = true,
    description = {
      "Bulk replays as tracked jobs kept in the database: preview what a selection covers, start a"
          + " job (a reason; for more letters than the threshold, their count typed), follow its"
          + " progress, pause, resume or cancel it. A running web console works the RUNNING jobs"
          + " in the background; 'run' (or 'start --run') works them in this process instead.",
      "Exit codes: 0 ok, 2 usage (no reason, wrong confirmation), 3 not confirmed, 4 no such job"
          + " (or nothing PENDING to replay), 5 refused in its current state."
    },
    subcommands = {
      DlqReplayJobCommands.Preview.class,
      DlqReplayJobCommands.Start.class,
      DlqReplayJobCommands.Status.class,
      DlqReplayJobCommands.ListJobs.class,
      DlqReplayJobCommands.Pause.class,
      DlqReplayJobCommands.Resume.class,
      DlqReplayJobCommands.Cancel.class,
      DlqReplayJobCommands.Run.class
    })
final class DlqReplayJobCommands implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  @Command(
      name = "preview",
      mixinStandardHelpOptions = true,
      description = {
        "What a replay job of the selection would cover now: count, topics, consumers, oldest and"
            + " newest first failure, a sample, and whether starting it needs the typed count.",
        "Exit code: 0 some PENDING letters, 4 none."
      })
  static final class Preview implements Callable<Integer> {
    @Mixin ReplaySelectionOptions selection = new ReplaySelectionOptions();
    @Mixin AdminOptions db = new AdminOptions();

    @Option(names = "--json", description = "Print the preview as JSON.")
    boolean json;

    @Override
    public Integer call() {
      ReplaySelection s = selection.selection();
      ReplayPreview p = db.admin().previewReplay(s);
      if (json) {
        Json.print(p, System.out);
      } else {
        print(p, System.out);
      }
      return p.count() == 0 ? ExitCodes.NOT_FOUND : ExitCodes.OK;
    }
  }

  static void print(ReplayPreview p, PrintStream out) {
    out.println("selection: " + p.selection());
    out.println("pending letters: " + p.count());
    out.println("topics: " + String.join(", ", p.topics()));
    out.println("consumers: " + String.join(", ", p.consumers()));
    out.println(
        "first failures: "
            + p.oldest().map(Object::toString).orElse("-")
            + " .. "
            + p.newest().map(Object::toString).orElse("-"));
    for (DeadLetterSummary d : p.sample()) {
      out.printf(
          "  %-8d %-24s %-14s %-16s %s%n",
          d.id(), d.firstFailure(), d.consumer(), d.topic(), d.errorClass());
    }
    if (p.confirmationNeeded()) {
      out.println("starting it needs the count typed: --confirm " + p.confirmation());
    }
  }

  @Command(
      name = "start",
      mixinStandardHelpOptions = true,
      description = {
        "Starts a replay job over the PENDING letters the selection covers now (oldest first, each"
            + " to its consumer only unless --broadcast), audited once for the job and once per"
            + " letter as --actor. More than 100 letters need --confirm COUNT, or the count typed at"
            + " the prompt.",
        "Exit code: 0 started (prints the job id last), 2 no reason or wrong count, 3 not"
            + " confirmed, 4 nothing PENDING to replay."
      })
  static final class Start implements Callable<Integer> {
    @Mixin ReplaySelectionOptions selection = new ReplaySelectionOptions();
    @Mixin AdminOptions db = new AdminOptions();
    @Mixin Confirmation confirm = new Confirmation();
    @Mixin ActorOption actor = new ActorOption();

    @Option(names = "--reason", required = true, description = "Why, for the audit.")
    String reason;

    @Option(
        names = "--confirm",
        paramLabel = "COUNT",
        description = "The count of letters the preview shows (needed above the threshold).")
    String confirmation;

    @Option(names = "--broadcast", description = "Replay to every consumer of the topic.")
    boolean broadcast;

    @Option(names = "--rate", description = "With --run: writes per second at most (default 100).")
    double rate = Replayer.DEFAULT_RATE_PER_SECOND;

    @Option(names = "--run", description = "Work the job in this process until it ends.")
    boolean run;

    @Option(names = "--json", description = "Print the job as JSON.")
    boolean json;

    @Override
    public Integer call() {
      ReplaySelection s = selection.selection();
      PostboxAdmin admin = admin();
      ReplayPreview p = admin.previewReplay(s);
      if (p.count() == 0) {
        System.err.println("postbox: no PENDING dead letter to replay: " + p.selection());
        return ExitCodes.NOT_FOUND;
      }
      if (!json) {
        print(p, System.out);
      }
      Optional<String> typed = Optional.ofNullable(confirmation);
      if (p.confirmationNeeded() && typed.isEmpty()) {
        typed = askCount(p);
        if (typed.isEmpty()) {
          return ExitCodes.NOT_CONFIRMED;
        }
      } else if (!p.confirmationNeeded()
          && !confirm.confirmed("replay " + p.count() + " letter(s) as " + actor.actor)) {
        return ExitCodes.NOT_CONFIRMED;
      }
      ReplayRoute route = broadcast ? ReplayRoute.BROADCAST : ReplayRoute.TARGETED;
      ReplayJob job = admin.as(actor.actor).startReplayJob(s, reason, typed, route);
      if (run) {
        job = DlqReplayJobCommands.run(admin, job.id());
      }
      if (json) {
        Json.print(job, System.out);
      } else {
        printJob(job, System.out);
        System.out.println(job.id());
      }
      return ExitCodes.OK;
    }

    private PostboxAdmin admin() {
      return PostboxAdmin.builder(db.dataSource())
          .decoder(
              dev.postbox.rabbitmq.RabbitDeadLetters.decoderOr(
                  dev.postbox.kafka.KafkaDeadLetters.decoder()))
          .ratePerSecond(rate)
          .build();
    }

    private Optional<String> askCount(ReplayPreview p) {
      java.io.Console console = System.console();
      if (console == null) {
        System.err.println(
            "postbox: not confirmed: "
                + p.count()
                + " letters need their count typed (no terminal to ask on; add --confirm "
                + p.confirmation()
                + ")");
        return Optional.empty();
      }
      String answer =
          console.readLine("Type the number of letters (%s) to replay them: ", p.confirmation());
      return Optional.ofNullable(answer);
    }
  }

  static void printJob(ReplayJob j, PrintStream out) {
    out.printf(
        "replay job %d: %s, %d of %d (%d%%): %d replayed, %d skipped, %d failed%s%n",
        j.id(),
        j.state(),
        j.processed(),
        j.total(),
        j.percent(),
        j.replayed(),
        j.skipped(),
        j.failed(),
        j.ratePerSecond().map(r -> String.format(", %.1f letters/s", r)).orElse(""));
    out.println(
        "  by "
            + j.createdBy()
            + " at "
            + j.createdAt()
            + ": "
            + j.reason()
            + " ("
            + j.selection()
            + (j.route() == ReplayRoute.BROADCAST ? ", broadcast" : "")
            + ")");
    j.changedBy().ifPresent(w -> out.println("  last paused, resumed or cancelled by " + w));
  }

  /** Works the RUNNING jobs in this process until none is free; the state of job {@code id}. */
  static ReplayJob run(PostboxAdmin admin, long id) {
    String instance =
        "cli-"
            + ProcessHandle.current().pid()
            + "-"
            + java.util.UUID.randomUUID().toString().substring(0, 8);
    ReplayJobRunner runner = admin.replayJobRunner(instance, Duration.ofSeconds(1));
    int n = 0;
    while (runner.step()) {
      if (++n % 100 == 0) {
        admin.replayJob(id).ifPresent(j -> printJob(j, System.err));
      }
    }
    return admin.replayJob(id).orElseThrow();
  }

  /** The job id argument of status, pause, resume, cancel. */
  static final class JobId {
    @Parameters(index = "0", paramLabel = "JOB", description = "The replay job.")
    long id;
  }

  @Command(
      name = "status",
      mixinStandardHelpOptions = true,
      description = {"One replay job's state and progress.", "Exit code: 0 found, 4 no such job."})
  static final class Status implements Callable<Integer> {
    @Mixin JobId job = new JobId();
    @Mixin AdminOptions db = new AdminOptions();

    @Option(names = "--json", description = "Print the job as JSON.")
    boolean json;

    @Override
    public Integer call() {
      ReplayJob j =
          db.admin()
              .replayJob(job.id)
              .orElseThrow(() -> new java.util.NoSuchElementException("no replay job " + job.id));
      if (json) {
        Json.print(j, System.out);
      } else {
        printJob(j, System.out);
      }
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      description = {"The replay jobs, newest first.", "Exit code: 0 some, 4 none."})
  static final class ListJobs implements Callable<Integer> {
    @Mixin AdminOptions db = new AdminOptions();

    @Option(names = "--limit", defaultValue = "20", description = "Jobs per page (1 to 1000).")
    int limit;

    @Option(names = "--after", description = "The cursor printed under the previous page.")
    String after;

    @Option(names = "--json", description = "Print JSON: {items: [...], next: cursor|null}.")
    boolean json;

    @Override
    public Integer call() {
      Page<ReplayJob> page =
          db.admin().replayJobs(new PageRequest(limit, Optional.ofNullable(after)));
      if (json) {
        Json.print(page, System.out);
      } else {
        page.items().forEach(j -> printJob(j, System.out));
        page.next().ifPresent(c -> System.out.println("next page: --after " + c));
      }
      return page.items().isEmpty() ? ExitCodes.NOT_FOUND : ExitCodes.OK;
    }
  }

  /** Pause, resume and cancel: one state change of one job, as --actor. */
  abstract static class Change implements Callable<Integer> {
    @Mixin JobId job = new JobId();
    @Mixin AdminOptions db = new AdminOptions();
    @Mixin ActorOption actor = new ActorOption();

    abstract ReplayJob change(dev.postbox.admin.OperatorActions ops, long id);

    @Override
    public Integer call() {
      printJob(change(db.admin().as(actor.actor), job.id), System.out);
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "pause",
      mixinStandardHelpOptions = true,
      description = {
        "Pauses a RUNNING job after the letter in hand.",
        "Exit code: 0 paused, 4 no such job, 5 not RUNNING."
      })
  static final class Pause extends Change {
    @Override
    ReplayJob change(dev.postbox.admin.OperatorActions ops, long id) {
      return ops.pauseReplayJob(id);
    }
  }

  @Command(
      name = "resume",
      mixinStandardHelpOptions = true,
      description = {
        "Resumes a PAUSED job where it stopped.",
        "Exit code: 0 resumed, 4 no such job, 5 not PAUSED."
      })
  static final class Resume extends Change {
    @Override
    ReplayJob change(dev.postbox.admin.OperatorActions ops, long id) {
      return ops.resumeReplayJob(id);
    }
  }

  @Command(
      name = "cancel",
      mixinStandardHelpOptions = true,
      description = {
        "Cancels a RUNNING or PAUSED job for good; letters not yet worked stay PENDING.",
        "Exit code: 0 cancelled, 4 no such job, 5 already ended."
      })
  static final class Cancel extends Change {
    @Override
    ReplayJob change(dev.postbox.admin.OperatorActions ops, long id) {
      return ops.cancelReplayJob(id);
    }
  }

  @Command(
      name = "run",
      mixinStandardHelpOptions = true,
      description = {
        "Works the RUNNING replay jobs in this process (with no console running, say) until none"
            + " is free, then prints the job named.",
        "Exit code: 0 done, 4 no such job."
      })
  static final class Run implements Callable<Integer> {
    @Mixin JobId job = new JobId();
    @Mixin AdminOptions db = new AdminOptions();

    @Option(names = "--rate", description = "Writes per second at most (default 100).")
    double rate = Replayer.DEFAULT_RATE_PER_SECOND;

    @Override
    public Integer call() {
      PostboxAdmin admin = db.admin(rate);
      admin
          .replayJob(job.id)
          .orElseThrow(() -> new java.util.NoSuchElementException("no replay job " + job.id));
      printJob(DlqReplayJobCommands.run(admin, job.id), System.out);
      return ExitCodes.OK;
    }
  }
}
