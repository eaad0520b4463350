package dev.postbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The operator commands' option parsing, without a database (bad input fails before any
 * connection).
 */
class OperatorCliTest {

  private record Run(int code, String out, String err) {}

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = new CommandLine(new OperatorCli());
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    int code = cli.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void migrateAndTraceShareTheLoginOptions() {
    for (String command : new String[] {"migrate", "trace"}) {
      Run help = run(command, "--help");
      assertThat(help.code()).isZero();
      assertThat(help.out()).contains("--user", "--password-env");
    }
  }

  @Test
  void aMissingPasswordVariableIsAUsageError() {
    String unset = "POSTBOX_CLI_TEST_UNSET_" + System.nanoTime();
    Run migrate =
        run("migrate", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/none", "--password-env", unset);
    assertThat(migrate.code()).isEqualTo(2);
    assertThat(migrate.err()).contains("environment variable " + unset + " is not set");

    Run trace =
        run(
            "trace",
            "00000000-0000-0000-0000-000000000001",
            "--pg-url",
            "postgresql://127.0.0.1:1/none",
            "--user",
            "someone",
            "--password-env",
            unset);
    assertThat(trace.code()).isEqualTo(2);
    assertThat(trace.err()).contains("environment variable " + unset + " is not set");
  }

  @Test
  void traceRejectsAMessageIdThatIsNotAUuid() {
    Run trace = run("trace", "not-a-uuid", "--pg-url", "postgresql://127.0.0.1:1/none");
    assertThat(trace.code()).isEqualTo(2);
    assertThat(trace.err()).contains("MESSAGE_ID must be a UUID");
  }

  @Test
  void migratePrintsItsScriptsWithoutADatabase() {
    Run sql = run("migrate", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/none", "--print-sql");
    assertThat(sql.code()).isZero();
  }
}
