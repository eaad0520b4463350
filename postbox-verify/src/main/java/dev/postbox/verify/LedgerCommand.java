package dev.postbox.verify;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ./postbox verify ledger}: recounts the committed campaign reports ({@link Ledger}). */
@Command(
    name = "ledger",
    mixinStandardHelpOptions = true,
    description = {
      "Recounts the proof from the campaign reports committed under --runs: only runs whose result"
          + " is OK under the current checker, on committed code, with their fault list, count;"
          + " their faults are recounted from that list. Exit code 0, or 2 when the folder is"
          + " missing or holds no report that counts."
    })
final class LedgerCommand implements Callable<Integer> {

  @Option(names = "--runs", description = "The folder of run reports (default: docs/proof/runs).")
  Path runs = Path.of("docs", "proof", "runs");

  @Option(names = "--json", description = "Also write the recount as JSON to this file.")
  Path json;

  @Override
  public Integer call() throws Exception {
    Ledger.Count c;
    try {
      c = Ledger.count(runs);
    } catch (java.io.IOException e) {
      System.err.println("ledger: " + e.getMessage());
      return 2;
    }
    Ledger.print(c, runs, System.out);
    if (json != null) {
      java.util.Map<String, Object> root = new java.util.LinkedHashMap<>();
      root.put("checker_version", Report.CHECKER_VERSION);
      root.put("counted_runs", c.runs());
      root.put("reports", c.entries().size());
      root.put("injections", c.injections());
      root.put("injections_by_mode", c.byMode());
      root.put("entries", c.entries());
      new com.fasterxml.jackson.databind.ObjectMapper()
          .writerWithDefaultPrettyPrinter()
          .writeValue(json.toFile(), root);
    }
    return c.runs() > 0 ? 0 : 2;
  }
}
