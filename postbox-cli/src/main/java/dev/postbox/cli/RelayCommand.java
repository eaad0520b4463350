package dev.postbox.cli;

import dev.postbox.admin.RelayStatus;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code postbox relay status}: relay instances and lanes. */
@Command(
    name = "relay",
    mixinStandardHelpOptions = true,
    description = "The relays.",
    subcommands = {RelayCommand.Status.class})
final class RelayCommand implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  @Command(
      name = "status",
      mixinStandardHelpOptions = true,
      description = {
        "Live relay instances (last heartbeat) and the lanes each owns, with pending rows and the"
            + " age of the oldest per lane.",
        "Exit code: 0 some relay is live, 4 none (nothing publishes the outbox)."
      })
  static final class Status implements Callable<Integer> {
    @Mixin AdminOptions db = new AdminOptions();

    @Option(names = "--json", description = "Print JSON: {instances: [...], lanes: [...]}.")
    boolean json;

    @Option(names = "--all-lanes", description = "Also list lanes without pending rows.")
    boolean allLanes;

    @Override
    public Integer call() {
      RelayStatus s = db.admin().relays();
      if (json) {
        Json.print(s, System.out);
      } else {
        System.out.println("instances");
        for (RelayStatus.Instance i : s.instances()) {
          long lanes =
              s.lanes().stream()
                  .filter(l -> l.leased() && l.owner().filter(i.id()::equals).isPresent())
                  .count();
          System.out.printf(
              "  %-40s seen %s ago, %d lanes, %s%n",
              i.id(), OutboxCommand.age(i.sinceSeen()), lanes, i.idle() ? "idle" : "busy");
        }
        System.out.println("lanes");
        for (RelayStatus.Lane l : s.lanes()) {
          if (allLanes || l.pending() > 0) {
            System.out.printf(
                "  %2d %-40s epoch %d  %d pending, oldest %s%n",
                l.lane(),
                l.leased() ? l.owner().orElse("-") : "(no owner)",
                l.epoch(),
                l.pending(),
                OutboxCommand.age(l.oldestPendingAge()));
          }
        }
      }
      return s.lanes().stream().anyMatch(RelayStatus.Lane::leased)
          ? ExitCodes.OK
          : ExitCodes.NOT_FOUND;
    }
  }
}
