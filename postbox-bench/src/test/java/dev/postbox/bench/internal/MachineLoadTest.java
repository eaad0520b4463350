package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The run's load record: read from the first field of /proc/loadavg, absent when unreadable. */
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
}
