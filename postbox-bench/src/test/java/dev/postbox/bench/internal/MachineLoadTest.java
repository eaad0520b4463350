package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.postbox.bench.BenchReport;
import dev.postbox.bench.Measurement;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The run's load: read from the first field of /proc/loadavg, absent when unreadable, and reported
 * as a top-level fact of the report (beside date and cores), not as a measurement.
 */
@Timeout(60)
class MachineLoadTest {

  @Test
  void theFirstFieldIsTheOneMinuteAverage(@TempDir Path dir) throws Exception {
    Path f = Files.writeString(dir.resolve("loadavg"), "1.40 0.53 0.20 2/311 4242\n");
    assertThat(MachineLoad.read(f)).hasValue(1.40);
  }

  @Test
  void aMissingOrGarbledFileGivesNothing(@TempDir Path dir) throws Exception {
    assertThat(MachineLoad.read(dir.resolve("none"))).isEmpty();
    assertThat(MachineLoad.read(Files.writeString(dir.resolve("bad"), "x y z"))).isEmpty();
  }

  @Test
  void theLoadIsAFactOfTheReportBesideItsMeasurements() throws Exception {
    Map<String, Double> machine = new LinkedHashMap<>();
    machine.put("machine_load_average_start", 1.38);
    BenchReport report =
        new BenchReport(
            LocalDate.of(2026, 12, 5),
            2,
            23.5,
            false,
            machine,
            List.of(Measurement.of("x_per_s", 10, "msgs/s")));
    JsonNode json = new ObjectMapper().readTree(report.toJson());
    assertThat(json.get("machine_load_average_start").asDouble()).isEqualTo(1.38);
    assertThat(json.get("x_per_s").get("value").asDouble()).isEqualTo(10);
    assertThat(report.measurements()).extracting(Measurement::name).containsExactly("x_per_s");
    assertThat(report.toMarkdown()).doesNotContain("machine_load");
  }
}
