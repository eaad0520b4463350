package dev.postbox.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The benchmark page's headline table is the committed full run's JSON, figure for figure: every
 * measurement of {@code docs/benchmarks-full.json} has its row, in its order, with its value, its
 * target and whether it was met, and the page names the run's date. A figure typed or edited by
 * hand, a target dropped from the table but not from the run, or a new run committed without its
 * table fails here.
 */
class BenchmarksPageTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

  /** One row of the headline table: name, value text, target and met cells. */
  record Row(String name, String value, String target, String met) {}

  @Test
  void theHeadlineTableIsTheCommittedFullRun() throws Exception {
    JsonNode run = new ObjectMapper().readTree(ROOT.resolve("docs/benchmarks-full.json").toFile());
    String page = Files.readString(ROOT.resolve("docs/benchmarks.md"));
    assertThat(run.path("quick").asBoolean(true)).as("the committed run is a full run").isFalse();
    assertThat(page).as("the page names the run's date").contains(run.path("date").asText());

    Map<String, Row> rows = headlineRows(page);
    List<String> measured = new ArrayList<>();
    run.properties()
        .forEach(e -> {
          if (e.getValue().isObject()) {
            measured.add(e.getKey());
          }
        });
    assertThat(List.copyOf(rows.keySet()))
        .as("the headline table's rows are the run's measurements, in order")
        .containsExactlyElementsOf(measured);

    for (String name : measured) {
      JsonNode m = run.get(name);
      Row row = rows.get(name);
      double value = Double.parseDouble(row.value().split(" ")[0].replace(",", ""));
      double expected = m.get("value").asDouble();
      assertThat(value)
          .as("%s: the table's value against the JSON's %s", name, expected)
          .isCloseTo(
              expected, org.assertj.core.api.Assertions.within(Math.max(0.011, expected * 0.005)));
      assertThat(row.target())
          .as("%s: target", name)
          .isEqualTo(m.get("target").isNull() ? "" : m.get("target").asText());
      String met = m.get("met").isNull() ? "" : m.get("met").asBoolean() ? "yes" : "**no**";
      assertThat(row.met()).as("%s: met", name).isEqualTo(met);
    }
  }

  /** The rows of the first "| measurement | value | ..." table under the "## Headline" heading. */
  static Map<String, Row> headlineRows(String page) {
    int headline = page.indexOf("\n## Headline");
    assertThat(headline).as("a '## Headline' section").isNotNegative();
    int table = page.indexOf("| measurement | value |", headline);
    assertThat(table).as("the headline table").isNotNegative();
    Map<String, Row> rows = new LinkedHashMap<>();
    for (String line : page.substring(table).split("\n")) {
      if (!line.startsWith("|")) {
        break;
      }
      String[] cells = line.split("\\|", -1);
      String name = cells[1].trim();
      if (!name.startsWith("`")) {
        continue; // the header and its rule
      }
      rows.put(
          name.replace("`", ""),
          new Row(name.replace("`", ""), cells[2].trim(), cells[5].trim(), cells[6].trim()));
    }
    return rows;
  }
}
