package dev.postbox.cli;

import dev.postbox.admin.Page;
import dev.postbox.admin.PageRequest;
import dev.postbox.admin.ParkedKey;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code postbox parked}: keys a consumer parked (ordered retries), and what to do about one. */
@Command(
    name = "parked",
    mixinStandardHelpOptions = true,
    description = "Parked keys: a failing message and the later messages of its key, in order.",
    subcommands = {
      ParkedCommand.ListKeys.class,
      ParkedCommand.Release.class,
      ParkedCommand.Skip.class
    })
final class ParkedCommand implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      description = {
        "Parked keys with their head (due, attempts, last error) and how many wait behind it;"
            + " BLOCKED keys wait for an operator.",
        "Exit code: 0 some parked, 4 none."
      })
  static final class ListKeys implements Callable<Integer> {
    @Mixin AdminOptions db = new AdminOptions();

    @Option(names = "--consumer", description = "Only this consumer's keys.")
    String consumer;

    @Option(names = "--limit", defaultValue = "50", description = "Items per page.")
    int limit;

    @Option(names = "--after", description = "The cursor printed under the previous page.")
    String after;

    @Option(names = "--json", description = "Print JSON: {items: [...], next: cursor|null}.")
    boolean json;

    @Override
    public Integer call() {
      Page<ParkedKey> page =
          db.admin()
              .parkedKeys(
                  Optional.ofNullable(consumer),
                  new PageRequest(limit, Optional.ofNullable(after)));
      if (json) {
        Json.print(page, System.out);
      } else {
        System.out.printf(
            "%-14s %-16s %8s %-8s %-24s %-8s %s%n",
            "CONSUMER", "KEY", "MESSAGES", "STATE", "DUE", "ATTEMPTS", "LAST ERROR");
        for (ParkedKey k : page.items()) {
          System.out.printf(
              "%-14s %-16s %8d %-8s %-24s %-8d %s%n",
              k.consumer(),
              k.key(),
              k.messages(),
              k.leased() ? "RETRYING" : k.blocked() ? "BLOCKED" : "WAITING",
              k.blocked() ? "-" : k.dueAt().toString(),
              k.attempts(),
              k.lastError().orElse(""));
        }
        DlqReadCommands.next(page, System.out);
      }
      return page.items().isEmpty() ? ExitCodes.NOT_FOUND : ExitCodes.OK;
    }
  }

  @Command(
      name = "release",
      mixinStandardHelpOptions = true,
      description = {
        "Makes a parked key due now: its consumer retries the sequence at its next drain (a"
            + " BLOCKED key goes on). Audited.",
        "Exit code: 0 released, 3 not confirmed, 4 not parked, 5 a consumer is retrying it now."
      })
  static final class Release implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "CONSUMER")
    String consumer;

    @Parameters(index = "1", paramLabel = "KEY")
    String key;

    @Mixin AdminOptions db = new AdminOptions();
    @Mixin Confirmation confirm = new Confirmation();
    @Mixin ActorOption actor = new ActorOption();

    @Override
    public Integer call() {
      if (!confirm.confirmed("release parked key " + key + " of " + consumer)) {
        return ExitCodes.NOT_CONFIRMED;
      }
      int n = db.admin().as(actor.actor).releaseParked(consumer, key);
      System.out.println("released key " + key + " of " + consumer + " (" + n + " parked)");
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "skip",
      mixinStandardHelpOptions = true,
      description = {
        "Skips the head of a parked key: kept, byte-identical, as a DISCARDED dead letter with the"
            + " reason; the next message of the key is due now. Audited.",
        "Exit code: 0 skipped, 3 not confirmed, 4 not parked, 5 a consumer is retrying it now."
      })
  static final class Skip implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "CONSUMER")
    String consumer;

    @Parameters(index = "1", paramLabel = "KEY")
    String key;

    @Option(names = "--reason", required = true, description = "Why, for the audit.")
    String reason;

    @Mixin AdminOptions db = new AdminOptions();
    @Mixin Confirmation confirm = new Confirmation();
    @Mixin ActorOption actor = new ActorOption();

    @Override
    public Integer call() {
      if (!confirm.confirmed("skip the head of parked key " + key + " of " + consumer)) {
        return ExitCodes.NOT_CONFIRMED;
      }
      long letter = db.admin().as(actor.actor).skipParked(consumer, key, reason);
      System.out.println("skipped the head of key " + key + ": kept as dead letter " + letter);
      return ExitCodes.OK;
    }
  }
}
