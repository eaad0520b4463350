package dev.postbox.cli;

import dev.postbox.admin.DeadLetterFilter;
import dev.postbox.admin.OperatorActions;
import dev.postbox.admin.PostboxAdmin;
import dev.postbox.jdbc.ReplayResult;
import dev.postbox.jdbc.ReplayRoute;
import dev.postbox.jdbc.Replayer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The actions of {@code postbox dlq}: replay, edit (a corrected copy), discard. Each asks first (or
 * takes {@code --yes}), acts through the audited, rate-limited Replayer as {@code --actor}.
 */
final class DlqActionCommands {

  private DlqActionCommands() {}

  /** One letter, a failure group, or one key of a consumer. */
  static final class Target {
    @Parameters(index = "0", arity = "0..1", paramLabel = "ID", description = "A dead letter.")
    Long id;

    @Option(names = "--group", description = "Every PENDING letter of this failure group.")
    String group;

    @Option(
        names = "--key",
        description = "Every PENDING letter of this key of --consumer, in order.")
    String key;

    @Option(names = "--consumer", description = "Only this consumer's letters (--key needs it).")
    String consumer;

    String describe() {
      if (id != null) {
        return "dead letter " + id;
      }
      if (group != null) {
        return "every pending letter of group "
            + group
            + (consumer == null ? "" : " of consumer " + consumer);
      }
      return "every pending letter of key " + key + " of consumer " + consumer;
    }

    void validate(CommandLine cli, boolean keyAllowed) {
      int n = (id != null ? 1 : 0) + (group != null ? 1 : 0) + (key != null ? 1 : 0);
      if (n != 1) {
        throw new CommandLine.ParameterException(
            cli, "name exactly one of ID, --group" + (keyAllowed ? " or --key" : ""));
      }
      if (key != null && (!keyAllowed || consumer == null)) {
        throw new CommandLine.ParameterException(
            cli, keyAllowed ? "--key needs --consumer" : "--key is not supported here");
      }
    }

    DeadLetterFilter groupFilter() {
      return DeadLetterFilter.builder().fingerprint(group).consumer(consumer).build();
    }
  }

  @Command(
      name = "replay",
      mixinStandardHelpOptions = true,
      description = {
        "Writes dead letters' messages into the outbox again (same message id: the consumer's inbox"
            + " dedupes), rate-limited and audited. A key is replayed in order and stops at the"
            + " first failure. Targeted: only the consumer that dead-lettered a message applies its"
            + " replay; the other consumers of the topic pass over it (--broadcast: all of them"
            + " receive it again).",
        "Exit code: 0 replayed, 1 some failed, 3 not confirmed, 4 nothing to replay, 5 the letter"
            + " is not PENDING (or replayed too often)."
      })
  static final class Replay implements Callable<Integer> {
    @Mixin Target target = new Target();
    @Mixin AdminOptions db = new AdminOptions();
    @Mixin Confirmation confirm = new Confirmation();
    @Mixin ActorOption actor = new ActorOption();

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Option(
        names = "--rate",
        description = "Writes per second at most (default: the Replayer's, 100).")
    double rate = Replayer.DEFAULT_RATE_PER_SECOND;

    @Option(
        names = "--broadcast",
        description =
            "Replay to every consumer of the topic, not only the one that dead-lettered the"
                + " message: consumers without an inbox (or whose dedupe record expired) apply it"
                + " again. Logged as a warning and audited as broadcast.")
    boolean broadcast;

    @Override
    public Integer call() {
      target.validate(spec.commandLine(), true);
      ReplayRoute route = broadcast ? ReplayRoute.BROADCAST : ReplayRoute.TARGETED;
      String to = broadcast ? " to EVERY consumer of the topic (broadcast)" : "";
      if (!confirm.confirmed("replay " + target.describe() + to + " as " + actor.actor)) {
        return ExitCodes.NOT_CONFIRMED;
      }
      OperatorActions ops = db.admin(rate).as(actor.actor);
      ReplayResult r =
          target.id != null
              ? ops.replay(target.id, route)
              : target.group != null
                  ? ops.replayAll(target.groupFilter(), route)
                  : ops.replayKey(target.consumer, target.key, route);
      System.out.printf(
          "replayed %d, skipped %d, failed %d%n",
          r.replayed().size(), r.skipped().size(), r.failed().size());
      print("replayed", r.replayed());
      print("skipped (not PENDING, replayed too often, or behind a failure)", r.skipped());
      print("failed (still PENDING; see the log above)", r.failed());
      if (!r.failed().isEmpty()) {
        return ExitCodes.PARTLY_FAILED;
      }
      if (r.replayed().isEmpty()) {
        return r.skipped().isEmpty() ? ExitCodes.NOT_FOUND : ExitCodes.CONFLICT;
      }
      return ExitCodes.OK;
    }

    private static void print(String what, java.util.List<Long> ids) {
      if (!ids.isEmpty()) {
        System.out.println("  " + what + ": " + ids);
      }
    }
  }

  @Command(
      name = "edit",
      mixinStandardHelpOptions = true,
      description = {
        "Writes a corrected copy of a dead letter's message: a new message id, the original's id as"
            + " causation id and in header postbox-copy-of, the new payload; the letter is"
            + " discarded as replaced. Audited.",
        "Exit code: 0 written (prints the copy's id), 3 not confirmed, 4 no such letter, 5 not"
            + " PENDING or not decodable."
      })
  static final class Edit implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "ID", description = "The dead letter.")
    long id;

    static final class Body {
      @Option(names = "--payload", description = "The corrected payload, as text.")
      String text;

      @Option(names = "--payload-file", description = "A file holding the corrected payload.")
      Path file;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Body body;

    @Option(names = "--content-type", description = "Its content type (default: the original's).")
    String contentType;

    @Option(names = "--reason", required = true, description = "Why, for the audit.")
    String reason;

    @Mixin AdminOptions db = new AdminOptions();
    @Mixin Confirmation confirm = new Confirmation();
    @Mixin ActorOption actor = new ActorOption();

    @Override
    public Integer call() throws IOException {
      byte[] payload =
          body.text != null
              ? body.text.getBytes(StandardCharsets.UTF_8)
              : Files.readAllBytes(body.file);
      if (!confirm.confirmed(
          "write a corrected copy of dead letter " + id + " as " + actor.actor)) {
        return ExitCodes.NOT_CONFIRMED;
      }
      PostboxAdmin admin = db.admin();
      UUID copy = admin.as(actor.actor).edit(id, payload, Optional.ofNullable(contentType), reason);
      System.out.println("wrote corrected copy " + copy + " of dead letter " + id);
      System.out.println(copy);
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "discard",
      mixinStandardHelpOptions = true,
      description = {
        "Discards a dead letter (or every PENDING letter of a group) with a reason; kept, never"
            + " replayed. Audited.",
        "Exit code: 0 discarded, 3 not confirmed, 4 no such letter (or none pending), 5 not"
            + " PENDING."
      })
  static final class Discard implements Callable<Integer> {
    @Mixin Target target = new Target();

    @Option(names = "--reason", required = true, description = "Why, for the audit.")
    String reason;

    @Mixin AdminOptions db = new AdminOptions();
    @Mixin Confirmation confirm = new Confirmation();
    @Mixin ActorOption actor = new ActorOption();

    @CommandLine.Spec CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
      target.validate(spec.commandLine(), false);
      if (!confirm.confirmed("discard " + target.describe() + " as " + actor.actor)) {
        return ExitCodes.NOT_CONFIRMED;
      }
      OperatorActions ops = db.admin().as(actor.actor);
      if (target.id != null) {
        ops.discard(target.id, reason);
        System.out.println("discarded dead letter " + target.id);
        return ExitCodes.OK;
      }
      int n = ops.discardAll(target.groupFilter(), reason);
      System.out.println("discarded " + n + " dead letter(s)");
      return n == 0 ? ExitCodes.NOT_FOUND : ExitCodes.OK;
    }
  }
}
