package dev.postbox.bench.internal;

import dev.postbox.bench.Measurement;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The machine's load while a run was taken: the 1-minute load average of {@code /proc/loadavg}
 * (Linux), recorded at the run's start and end, so a report says itself whether other work shared
 * the cores with it (on 2 cores, a load above 2 means something waited for a core).
 */
public final class MachineLoad {

  private static final Path LOADAVG = Path.of("/proc/loadavg");

  private MachineLoad() {}

  /**
   * {@code machine_load_average_<when>}: the 1-minute load average now, empty where the system has
   * no {@code /proc/loadavg}.
   */
  public static Optional<Measurement> now(String when, int cores) {
    return read(LOADAVG)
        .map(load ->
            Measurement.of("machine_load_average_" + when, load, "load")
                .note(
                    "1-minute load average at the run's "
                        + when
                        + " (/proc/loadavg), on "
                        + cores
                        + " cores"));
  }

  static Optional<Double> read(Path loadavg) {
    try {
      String[] fields = Files.readString(loadavg).trim().split("\\s+");
      return Optional.of(Double.parseDouble(fields[0]));
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }
}
