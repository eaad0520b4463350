package dev.postbox.verify;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.NumberFormat;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * The totals the README and the ledger page quote are the ledger's output on the committed run
 * reports, not hand-typed sums: this recounts {@code docs/proof/runs} and fails when a report was
 * added without the quotes being brought up to date (or a quote edited by hand).
 */
class LedgerQuotedTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  @Test
  void theReadmeAndTheLedgerPageQuoteTheRecountOfTheCommittedReports() throws Exception {
    Ledger.Count count = Ledger.count(ROOT.resolve("docs/proof/runs"));
    assertThat(count.runs()).as("counted runs").isPositive();

    String faults = NumberFormat.getIntegerInstance(Locale.ENGLISH).format(count.injections());
    String readme = Files.readString(ROOT.resolve("README.md")).replaceAll("\\s+", " ");
    assertThat(readme)
        .as("README.md quotes `./postbox verify ledger`")
        .contains("today " + faults + " injected faults in " + count.runs() + " counted runs");

    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Ledger.print(
        count, Path.of("docs/proof/runs"), new PrintStream(out, true, StandardCharsets.UTF_8));
    String printed = out.toString(StandardCharsets.UTF_8);
    String page = Files.readString(ROOT.resolve("docs/proof/ledger.md"));
    // the page shows the output without its first line (the folder, which depends on the caller)
    String quoted = printed.substring(printed.indexOf('\n') + 1).stripTrailing();
    assertThat(page)
        .as("docs/proof/ledger.md shows the ledger's output today, line for line")
        .contains(quoted);
  }
}
