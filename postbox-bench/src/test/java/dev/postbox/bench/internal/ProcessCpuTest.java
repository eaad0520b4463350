package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** CPU per message between two snapshots keeps the work of processes that ended in between. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ProcessCpuTest {

  @Test
  void endedChildrenAreReadFromCutimeAndCstime() {
    // fields 14-17: utime 500, stime 40, cutime 1234, cstime 66 (ticks of 10 ms)
    String stat =
        "4242 (postgres: bench db) S 1 4242 4242 0 -1 4194560 100 0 0 0 500 40 1234 66 20 0 1 0";

    assertThat(ProcessCpu.endedChildrenMs(stat)).isCloseTo(13_000.0, within(1e-9));
  }

  @Test
  void aChildThatRanAndEndedBetweenTwoSnapshotsIsCounted() throws Exception {
    ProcessCpu cpu = ProcessCpu.ofThisJvm();
    Map<String, Double> before = cpu.snapshot();
    Process child =
        new ProcessBuilder("sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; echo $i")
            .redirectErrorStream(true)
            .start();
    String out = new String(child.getInputStream().readAllBytes()).trim();
    assertThat(child.waitFor()).isZero(); // waited for: its CPU is now this JVM's cutime/cstime
    Map<String, Double> us = ProcessCpu.perMessageUs(before, cpu.snapshot(), 1);

    assertThat(out).isEqualTo("400000");
    assertThat(us.get("broker")).isPositive();
    assertThat(us.get("postgres")).isZero();
    assertThat(us.get("total")).isCloseTo(us.get("jvm") + us.get("broker"), within(1e-6));
  }
}
