package dev.postbox.verify;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The ledger of record: recounts the campaign's proof from the JSON reports committed under a
 * folder (by default {@code docs/proof/runs}), so that the totals the README quotes are the output
 * of this count, not hand-typed sums. A run counts only if its report says {@code OK}, was judged
 * by the current checker ({@link Report#CHECKER_VERSION}), ran committed code (a commit, no
 * uncommitted changes) and lists its faults, as many fired as its total says; its injections are
 * recounted from that list (faults that fired). Every other report is listed with the reason it
 * does not count; the same run (seed, start, transport) committed twice counts once.
 */
final class Ledger {

  /** One report's verdict: counted, or not and why. */
  record Entry(
      String file,
      boolean counted,
      String why,
      String transport,
      String relay,
      String consumerMode,
      boolean cluster,
      long injections,
      long declaredInjections) {

    /** Transport, relay and consumer mode, then {@code /cluster} for a run on a cluster. */
    String mode() {
      return transport + "/" + relay + "/" + consumerMode + (cluster ? "/cluster" : "");
    }
  }

  /** The recount: every entry, and the totals of the counted ones. */
  record Count(List<Entry> entries) {

    long runs() {
      return entries.stream().filter(Entry::counted).count();
    }

    long injections() {
      return entries.stream().filter(Entry::counted).mapToLong(Entry::injections).sum();
    }

    /**
     * Counted injections per transport, relay and consumer mode ({@code kafka/idempotent/inbox}),
     * runs on a cluster apart ({@code kafka/idempotent/inbox/cluster}).
     */
    Map<String, Long> byMode() {
      Map<String, Long> by = new TreeMap<>();
      for (Entry e : entries) {
        if (e.counted()) {
          by.merge(e.mode(), e.injections(), Long::sum);
        }
      }
      return by;
    }
  }

  private static final ObjectMapper JSON = new ObjectMapper();

  private Ledger() {}

  /** Recounts every {@code *.json} report directly under {@code dir}, in file-name order. */
  static Count count(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      throw new IOException("no folder of run reports at " + dir.toAbsolutePath());
    }
    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      files = s.filter(f -> f.getFileName().toString().endsWith(".json")).sorted().toList();
    }
    List<Entry> entries = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (Path f : files) {
      entries.add(judge(f, seen));
    }
    return new Count(entries);
  }

  private static Entry judge(Path file, Set<String> seen) {
    String name = file.getFileName().toString();
    JsonNode r;
    try {
      r = JSON.readTree(file.toFile());
    } catch (IOException e) {
      return new Entry(
          name, false, "not a JSON report: " + e.getMessage(), "?", "?", "?", false, 0, 0);
    }
    String transport = r.path("transport").asText("?");
    String relay = r.path("relay").asText("?");
    String mode = r.path("consumer_mode").asText("?");
    // reports from before the key: the command says whether it ran on a cluster
    boolean cluster = r.path("cluster").asBoolean(commandHas(r, "--cluster"));
    long declared = r.path("injections").asLong(0);
    long fired = 0;
    for (JsonNode fault : r.path("faults")) {
      if ("fired".equals(fault.path("outcome").asText())) {
        fired++;
      }
    }
    String why = null;
    if (!r.has("seed") || !r.has("result") || !r.path("scenarios").isArray()) {
      why = "not a campaign report (no seed, result or scenarios)";
    } else if (!"OK".equals(r.path("result").asText())) {
      why = "result " + r.path("result").asText();
    } else if (r.path("checker_version").asInt(1) != Report.CHECKER_VERSION) {
      why =
          "judged by checker version "
              + r.path("checker_version").asInt(1)
              + ", not the current "
              + Report.CHECKER_VERSION;
    } else if (!r.has("commit") || "unknown".equals(r.path("commit").asText())) {
      why = "no commit: the code that ran is not known";
    } else if (r.path("dirty").asBoolean(true)) {
      why = "ran with uncommitted changes";
    } else if (!r.path("faults").isArray() || fired == 0) {
      why = "no fault fired in its fault list";
    } else if (fired != declared) {
      why = "its fault list shows " + fired + " faults fired, its total says " + declared;
    } else if (!seen.add(
        r.path("seed").asText() + " " + r.path("started").asText() + " " + transport)) {
      why = "the same run as an earlier file";
    }
    return new Entry(
        name,
        why == null,
        why == null ? "" : why,
        transport,
        relay,
        mode,
        cluster,
        fired,
        declared);
  }

  private static boolean commandHas(JsonNode report, String argument) {
    for (JsonNode a : report.path("command")) {
      if (argument.equals(a.asText())) {
        return true;
      }
    }
    return false;
  }

  /** Prints the recount: one line per report, then the totals. */
  static void print(Count c, Path dir, PrintStream out) {
    out.println("Postbox proof ledger: " + dir);
    for (Entry e : c.entries()) {
      out.printf(
          "  %-56s %s%n",
          e.file(),
          e.counted()
              ? String.format("counted: %s, %d faults fired", e.mode(), e.injections())
              : "not counted: " + e.why());
    }
    out.printf(
        "counted runs: %d of %d; injected faults that fired: %d%n",
        c.runs(), c.entries().size(), c.injections());
    c.byMode().forEach((mode, n) -> out.printf("  %-40s %d%n", mode, n));
  }
}
