package dev.postbox.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The result of a benchmark run: when, on what machine, in which mode, and the measurements in the
 * order they were taken. Renders the JSON report (a published interface: top-level {@code date},
 * {@code cores}, {@code memory_gb}, {@code quick}, the {@code machine} facts (e.g. {@code
 * machine_load_average_start}: numbers), then one key per measurement mapping to {@code value,
 * unit, baseline, baseline_name, ratio, target, met, note}, null where not applicable) and the
 * Markdown table. Immutable and thread-safe.
 *
 * @param date the day of the run
 * @param cores available processors
 * @param memoryGb physical memory of the machine in GB (0 if unknown)
 * @param quick whether this was the quick (CI) mode
 * @param machine the machine's state while the run was taken, by JSON key (its load averages)
 * @param measurements the figures, in order
 */
public record BenchReport(
    LocalDate date,
    int cores,
    double memoryGb,
    boolean quick,
    java.util.Map<String, Double> machine,
    List<Measurement> measurements) {

  public BenchReport {
    Objects.requireNonNull(date, "date");
    machine = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(machine));
    measurements = List.copyOf(measurements);
  }

  /** A report without facts about the machine's state beyond its cores and memory. */
  public BenchReport(
      LocalDate date, int cores, double memoryGb, boolean quick, List<Measurement> measurements) {
    this(date, cores, memoryGb, quick, java.util.Map.of(), measurements);
  }

  /** The measurement called {@code name}, if there is one. */
  public Optional<Measurement> get(String name) {
    return measurements.stream().filter(m -> m.name().equals(name)).findFirst();
  }

  /** The JSON report. */
  public String toJson() {
    ObjectMapper mapper = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    ObjectNode root = mapper.createObjectNode();
    root.put("date", date.toString());
    root.put("cores", cores);
    root.put("memory_gb", Math.round(memoryGb * 10) / 10.0);
    root.put("quick", quick);
    machine.forEach(root::put);
    for (Measurement m : measurements) {
      ObjectNode n = root.putObject(m.name());
      n.put("value", round(m.value()));
      n.put("unit", m.unit());
      if (m.baseline().isPresent()) {
        n.put("baseline", round(m.baseline().getAsDouble()));
      } else {
        n.putNull("baseline");
      }
      n.put("baseline_name", m.baselineName().orElse(null));
      if (m.ratio().isPresent()) {
        n.put("ratio", Math.round(m.ratio().getAsDouble() * 1000) / 1000.0);
      } else {
        n.putNull("ratio");
      }
      n.put("target", m.target().map(Target::toString).orElse(null));
      if (m.met().isPresent()) {
        n.put("met", m.met().get());
      } else {
        n.putNull("met");
      }
      n.put("note", m.note());
    }
    try {
      return mapper.writeValueAsString(root) + "\n";
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("cannot render the report", e);
    }
  }

  /** The Markdown table: measurement | value | baseline | ratio | target | met. */
  public String toMarkdown() {
    List<String> lines = new ArrayList<>();
    lines.add("| measurement | value | baseline | ratio | target | met |");
    lines.add("| --- | ---: | --- | ---: | --- | --- |");
    for (Measurement m : measurements) {
      String baseline =
          m.baseline().isPresent()
              ? Measurement.format(m.baseline().getAsDouble())
                  + " (`"
                  + m.baselineName().get()
                  + "`)"
              : "";
      String ratio = m.ratio().isPresent() ? Measurement.format(m.ratio().getAsDouble()) + "×" : "";
      String met = m.met().map(b -> b ? "yes" : "**no**").orElse("");
      lines.add(
          "| `%s` | %s %s | %s | %s | %s | %s |"
              .formatted(
                  m.name(),
                  Measurement.format(m.value()),
                  m.unit(),
                  baseline,
                  ratio,
                  m.target().map(Target::toString).orElse(""),
                  met));
    }
    return String.join("\n", lines) + "\n";
  }

  /** The notes, one Markdown bullet per measurement that has one. */
  public String notesMarkdown() {
    StringBuilder b = new StringBuilder();
    for (Measurement m : measurements) {
      if (!m.note().isEmpty()) {
        b.append("- `").append(m.name()).append("`: ").append(m.note()).append('\n');
      }
    }
    return b.toString();
  }

  private static double round(double x) {
    return Math.abs(x) >= 100 ? Math.round(x) : Math.round(x * 100) / 100.0;
  }
}
