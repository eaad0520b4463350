package dev.postbox.bench.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The machine's load while a run was taken: the 1-minute load average of {@code /proc/loadavg}
 * (Linux), recorded at the run's start and end as top-level facts of the report (beside its date
 * and cores), so a report says itself whether other work shared the cores with it (on 2 cores, a
 * load above 2 means something waited for a core).
 */
public final class MachineLoad {

  private static final Path LOADAVG = Path.of("/proc/loadavg");

  private MachineLoad() {}

  /**
   * The 1-minute load average now, under its report key {@code machine_load_average_<when>};
   * nothing where the system has no {@code /proc/loadavg}.
   */
  public static void record(String when, java.util.Map<String, Double> into) {
    read(LOADAVG).ifPresent(load -> into.put("machine_load_average_" + when, load));
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
