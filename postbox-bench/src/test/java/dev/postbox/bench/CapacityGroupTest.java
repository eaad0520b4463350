package dev.postbox.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The {@code capacity} group is opt-in: named with {@code --only}, never part of the default run
 * (nor of CI's quick run, which runs the default groups). Starts nothing.
 */
@Timeout(value = 1, unit = TimeUnit.MINUTES)
class CapacityGroupTest {

  @Test
  void capacityIsAnOptInGroup() {
    assertThat(BenchRunner.OPT_IN_GROUPS).contains("capacity");
    assertThat(BenchRunner.GROUPS).doesNotContain("capacity");
    assertThatCode(() ->
            new BenchRunner(
                BenchConfig.quickMode(),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                Set.of("capacity")))
        .doesNotThrowAnyException();
  }
}
