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
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    int code =
        run(Map.of(), captured, "--pg-url", "jdbc:postgresql://127.0.0.1:1/none", "--port", "0");
    assertThat(code).isEqualTo(2);
    assertThat(captured.toString(StandardCharsets.UTF_8).trim()).isEqualTo(ConsoleUsers.NO_ADMIN);
  }

  @Test
  void aPasswordVariableThatIsNotSetIsAUsageError() {
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    int code =
        run(
            Map.of("POSTBOX_CONSOLE_ADMIN_PASSWORD", "pw"),
            captured,
            "--pg-url",
            "jdbc:postgresql://127.0.0.1:1/none",
            "--password-env",
            "NOT_SET_ANYWHERE");
    assertThat(code).isEqualTo(2);
    assertThat(captured.toString(StandardCharsets.UTF_8)).contains("NOT_SET_ANYWHERE is not set");
  }

  @Test
  void everyDocumentedCommandLineIsAcceptedAsWritten() throws Exception {
    java.nio.file.Path page = java.nio.file.Path.of("..", "docs", "reference", "console.md");
    String doc = java.nio.file.Files.readString(page);
    java.util.List<String> lines =
        doc.lines()
            .filter(l -> l.startsWith("./postbox console"))
            .map(l -> l.replaceFirst("#.*", "").replace("[", " ").replace("]", " "))
            .map(l -> l.substring("./postbox console".length()).trim())
            .toList();
    assertThat(lines).as("command lines in " + page).hasSizeGreaterThanOrEqualTo(4);
    java.util.regex.Matcher inline =
        java.util.regex.Pattern.compile("`(--[a-z][^` ]*=[^` ]*)`").matcher(doc);
    java.util.List<String> all = new java.util.ArrayList<>(lines);
    while (inline.find()) {
      all.add(inline.group(1));
    }
    assertThat(all).as("the Secure-cookie option of the docs").contains(SECURE_COOKIE);
    for (String line : all) {
      ConsoleCommand command = new ConsoleCommand(Map.<String, String>of()::get);
      String[] args = line.isBlank() ? new String[0] : line.split("\\s+");
      new CommandLine(command).parseArgs(args);
      assertThat(command.unknownArguments()).as(line).isEmpty();
    }
  }

  static final String SECURE_COOKIE = "--server.servlet.session.cookie.secure=true";

  @Test
  void springPropertiesArePassedOnAndAnythingElseIsAUsageError() {
    ConsoleCommand command = new ConsoleCommand(Map.<String, String>of()::get);
    new CommandLine(command).parseArgs("--port", "0", SECURE_COOKIE);
    assertThat(command.springProperties).containsExactly(SECURE_COOKIE);
    assertThat(command.unknownArguments()).isEmpty();
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    int code =
        run(
            Map.of("POSTBOX_CONSOLE_ADMIN_PASSWORD", "pw"),
            captured,
            "--pg-url",
            "jdbc:postgresql://127.0.0.1:1/none",
            "--secure-cookies");
    assertThat(code).isEqualTo(2);
    assertThat(captured.toString(StandardCharsets.UTF_8))
        .contains("unknown option --secure-cookies");
  }

  /** Runs the command on {@code env}, its standard error into {@code err}; its exit code. */
  private static int run(Map<String, String> env, ByteArrayOutputStream err, String... args) {
    PrintStream original = System.err;
    try (PrintStream p = new PrintStream(err, true, StandardCharsets.UTF_8)) {
      System.setErr(p);
      return new CommandLine(new ConsoleCommand(env::get)).execute(args);
    } finally {
      System.setErr(original);
    }
  }
}
