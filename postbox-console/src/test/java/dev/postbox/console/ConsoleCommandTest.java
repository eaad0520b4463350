package dev.postbox.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code ./postbox console} refuses to start without an admin credential, before anything runs. */
class ConsoleCommandTest {

  @Test
  void withoutAnAdminPasswordOrGenerateItExitsTwoWithOneLine() {
    PrintStream err = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    int code;
    try (PrintStream p = new PrintStream(captured, true, StandardCharsets.UTF_8)) {
      System.setErr(p);
      code =
          new CommandLine(new ConsoleCommand(Map.<String, String>of()::get))
              .execute("--pg-url", "jdbc:postgresql://127.0.0.1:1/none", "--port", "0");
    } finally {
      System.setErr(err);
    }
    assertThat(code).isEqualTo(2);
    assertThat(captured.toString(StandardCharsets.UTF_8).trim()).isEqualTo(ConsoleUsers.NO_ADMIN);
  }

  @Test
  void aPasswordVariableThatIsNotSetIsAUsageError() {
    PrintStream err = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    int code;
    try (PrintStream p = new PrintStream(captured, true, StandardCharsets.UTF_8)) {
      System.setErr(p);
      code =
          new CommandLine(new ConsoleCommand(Map.of("POSTBOX_CONSOLE_ADMIN_PASSWORD", "pw")::get))
              .execute(
                  "--pg-url",
                  "jdbc:postgresql://127.0.0.1:1/none",
                  "--password-env",
                  "NOT_SET_ANYWHERE");
    } finally {
      System.setErr(err);
    }
    assertThat(code).isEqualTo(2);
    assertThat(captured.toString(StandardCharsets.UTF_8)).contains("NOT_SET_ANYWHERE is not set");
  }
}
