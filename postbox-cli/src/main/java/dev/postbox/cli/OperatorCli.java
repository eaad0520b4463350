package dev.postbox.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code ./postbox} launcher's operator commands: {@code migrate} and {@code trace}. */
@Command(
    name = "postbox",
    mixinStandardHelpOptions = true,
    version = "postbox 0.1.0-SNAPSHOT",
    description = "Postbox operator commands: create or upgrade the tables, trace one message.",
    subcommands = {MigrateCommand.class, TraceCommand.class})
public final class OperatorCli implements Runnable {

  public static void main(String[] args) {
    int code = new CommandLine(new OperatorCli()).execute(args);
    System.exit(code);
  }

  @Override
  public void run() {
    new CommandLine(this).usage(System.out);
  }
}
