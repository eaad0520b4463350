package dev.postbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/**
 * The operations commands' command lines, without a database: bad input fails before connecting.
 */
class OperationsCliTest {

  private record Run(int code, String out, String err) {}

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    picocli.CommandLine cli = OperatorCli.commandLine();
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    int code = cli.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  private static final String URL = "jdbc:postgresql://127.0.0.1:1/none";

  @Test
  void everyCommandHasHelpAndEveryReadCommandHasJson() {
    String[][] reads = {
      {"dlq", "list"},
      {"dlq", "groups"},
      {"dlq", "show"},
      {"dlq", "audit"},
      {"parked", "list"},
      {"outbox", "status"},
      {"outbox", "blocked"},
      {"relay", "status"},
      {"lag"}
    };
    for (String[] r : reads) {
      String[] args = java.util.Arrays.copyOf(r, r.length + 1);
      args[r.length] = "--help";
      Run help = run(args);
      assertThat(help.code()).as(String.join(" ", r)).isZero();
      assertThat(help.out()).as(String.join(" ", r)).contains("--json", "--pg-url");
    }
    String[][] actions = {
      {"dlq", "replay"},
      {"dlq", "edit"},
      {"dlq", "discard"},
      {"parked", "release"},
      {"parked", "skip"},
      {"outbox", "unblock"}
    };
    for (String[] a : actions) {
      Run help = run(a[0], a[1], "--help");
      assertThat(help.code()).isZero();
      assertThat(help.out()).as(a[1]).contains("--yes", "--actor", "Exit code");
    }
    assertThat(run("dlq", "replay", "--help").out())
        .as("targeted by default; broadcast only when asked")
        .contains("--broadcast", "Targeted");
  }

  @Test
  void badCommandLinesAreUsageErrors() {
    assertThat(run("dlq", "replay", "--pg-url", URL, "--yes").code())
        .as("no target")
        .isEqualTo(ExitCodes.USAGE);
    assertThat(run("dlq", "replay", "7", "--group", "g", "--pg-url", URL).code())
        .as("two targets")
        .isEqualTo(ExitCodes.USAGE);
    assertThat(run("dlq", "replay", "--key", "k", "--pg-url", URL).code())
        .as("a key needs its consumer")
        .isEqualTo(ExitCodes.USAGE);
    assertThat(run("dlq", "discard", "7", "--pg-url", URL, "--yes").code())
        .as("no reason")
        .isEqualTo(ExitCodes.USAGE);
    assertThat(run("dlq", "edit", "7", "--reason", "r", "--pg-url", URL).code())
        .as("no payload")
        .isEqualTo(ExitCodes.USAGE);
    assertThat(run("outbox", "unblock", "7", "--skip", "--pg-url", URL).code())
        .as("skip needs a reason")
        .isEqualTo(ExitCodes.USAGE);
    assertThat(run("dlq", "list", "--since", "yesterday", "--pg-url", URL).code())
        .isEqualTo(ExitCodes.USAGE);
    assertThat(run("dlq", "list", "--message-id", "order-42", "--pg-url", URL).code())
        .as("a message id is a UUID")
        .isEqualTo(ExitCodes.USAGE);
  }

  @Test
  void anActionWithoutYesAndWithoutATerminalIsNotConfirmed() {
    Run r = run("parked", "release", "c", "k", "--pg-url", URL);
    assertThat(r.code()).isEqualTo(ExitCodes.NOT_CONFIRMED);
  }
}
