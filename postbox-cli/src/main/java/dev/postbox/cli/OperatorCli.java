package dev.postbox.cli;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code ./postbox} launcher's operator commands: {@code migrate}, {@code trace}, and the
 * operations commands on postbox-admin ({@code dlq}, {@code parked}, {@code outbox}, {@code relay},
 * {@code lag}).
 */
@Command(
    name = "postbox",
    mixinStandardHelpOptions = true,
    version = "postbox 0.1.0-SNAPSHOT",
    description = {
      "Postbox operator commands: create or upgrade the tables, trace one message, work the dead"
          + " letters, parked keys and blocked outbox rows, see relays and lag.",
      "Connection: --pg-url/--schema/--user/--password-env, or $POSTBOX_PG_URL, $POSTBOX_PG_SCHEMA,"
          + " $POSTBOX_PG_USER, $POSTBOX_PG_PASSWORD (migrate and trace take their own URL"
          + " option). Actions ask first unless --yes; --actor (default $POSTBOX_ACTOR or the OS"
          + " user) is recorded in the audit.",
      "Exit codes: 0 ok, 1 partly failed, 2 usage, 3 not confirmed, 4 not found, 5 refused in"
          + " its current state, 6 database error."
    },
    subcommands = {
      MigrateCommand.class,
      TraceCommand.class,
      DlqCommand.class,
      ParkedCommand.class,
      OutboxCommand.class,
      RelayCommand.class,
      LagCommand.class
    })
public final class OperatorCli implements Runnable {

  public static void main(String[] args) {
    // what producers wrote is printed: no control character reaches the terminal as such
    System.setOut(TerminalSafeOutput.printStream(new FileOutputStream(FileDescriptor.out)));
    System.setErr(TerminalSafeOutput.printStream(new FileOutputStream(FileDescriptor.err)));
    System.exit(commandLine().execute(args));
  }

  /** The command line with the operator commands' exit codes for the API's exceptions. */
  public static CommandLine commandLine() {
    return new CommandLine(new OperatorCli()).setExecutionExceptionHandler(ExitCodes.handler());
  }

  @Override
  public void run() {
    new CommandLine(this).usage(System.out);
  }
}
