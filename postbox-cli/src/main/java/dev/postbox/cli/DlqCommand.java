package dev.postbox.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code postbox dlq}: the dead letters. */
@Command(
    name = "dlq",
    mixinStandardHelpOptions = true,
    description = {
      "Dead letters: find what failed and why, fix it, replay it, audited.",
      "Procedure: dlq groups -> dlq list --group G -> dlq show ID -> fix the consumer (or dlq edit"
          + " ID) -> dlq replay -> trace MESSAGE_ID (applied) -> dlq audit."
    },
    subcommands = {
      DlqReadCommands.ListLetters.class,
      DlqReadCommands.Groups.class,
      DlqReadCommands.Show.class,
      DlqActionCommands.Replay.class,
      DlqActionCommands.Edit.class,
      DlqActionCommands.Discard.class,
      DlqReadCommands.Audit.class,
      DlqReplayJobCommands.class
    })
final class DlqCommand implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }
}
