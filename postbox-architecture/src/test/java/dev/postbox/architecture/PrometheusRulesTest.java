package dev.postbox.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The alert rules users copy ({@code docs/alerts.yml}) are valid Prometheus rules and behave as
 * their unit tests ({@code docs/alerts.test.yml}) say, checked by Prometheus's own {@code promtool}
 * ({@code check rules}, {@code test rules}); and every rule has a test. Runs whenever {@code
 * promtool} is installed and always under {@code CI=true} ({@code .ci/run} installs it).
 */
class PrometheusRulesTest {

  private static final Path PROMTOOL = Path.of("/usr/bin/promtool");
  private static final Path DOCS = Path.of("..").toAbsolutePath().normalize().resolve("docs");

  @BeforeAll
  static void promtool() {
    if (!Files.isExecutable(PROMTOOL) && !"true".equals(System.getenv("CI"))) {
      System.out.println(
          "PrometheusRulesTest skipped: no promtool at "
              + PROMTOOL
              + " (apt-get install prometheus; it always runs under CI=true)");
      Assumptions.abort("promtool is not installed");
    }
  }

  @Test
  void theRulesAreValid() throws Exception {
    assertThat(promtool("check", "rules", "alerts.yml")).contains("SUCCESS");
  }

  @Test
  void theRulesPassTheirUnitTests() throws Exception {
    assertThat(promtool("test", "rules", "alerts.test.yml")).contains("SUCCESS");
  }

  @Test
  void everyRuleHasAUnitTest() throws IOException {
    Set<String> rules = names(Pattern.compile("(?m)^\\s*- alert: (\\w+)"), "alerts.yml");
    Set<String> tested = names(Pattern.compile("(?m)^\\s*alertname: (\\w+)"), "alerts.test.yml");
    assertThat(rules).as("rules in docs/alerts.yml").contains("PostboxConsumerStalled");
    assertThat(tested).as("rules with a test in docs/alerts.test.yml").containsAll(rules);
  }

  @Test
  void aBrokenRuleFailsTheCheck(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
    Path bad = dir.resolve("bad.yml");
    Files.writeString(
        bad,
        "groups:\n  - name: x\n    rules:\n      - alert: Broken\n        expr: sum(rate(x[5m]) >\n");
    Process p =
        new ProcessBuilder(PROMTOOL.toString(), "check", "rules", bad.toString())
            .redirectErrorStream(true)
            .start();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as("promtool's exit code on a broken rule").isNotZero();
  }

  /** Runs promtool in docs/ and returns its output; fails the test on a non-zero exit. */
  private static String promtool(String... args) throws Exception {
    String[] command = new String[args.length + 1];
    command[0] = PROMTOOL.toString();
    System.arraycopy(args, 0, command, 1, args.length);
    Process p =
        new ProcessBuilder(command).directory(DOCS.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("promtool ended").isTrue();
    assertThat(p.exitValue()).as("promtool %s:%n%s", String.join(" ", args), out).isZero();
    return out;
  }

  private static Set<String> names(Pattern p, String file) throws IOException {
    Set<String> found = new TreeSet<>();
    Matcher m = p.matcher(Files.readString(DOCS.resolve(file)));
    while (m.find()) {
      found.add(m.group(1));
    }
    return found;
  }
}
