package dev.postbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.CrashPoints;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A crash point armed in several processes with the same {@link CrashPoints#ONCE_PROPERTY} file
 * fires once in all: the first process to reach it halts, the next goes on; without the file each
 * halts.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class CrashPointsOnceTest {

  @Test
  void theFirstProcessToReachTheArmedPointHaltsAndTheNextGoesOn(@TempDir Path dir) {
    Path once = dir.resolve("crash.once");

    assertThat(run(dir, "a", Optional.of(once))).isEqualTo(CrashPoints.EXIT_CODE);
    assertThat(once).exists();
    assertThat(run(dir, "b", Optional.of(once))).isZero();
  }

  @Test
  void withoutTheFileEveryArmedProcessHalts(@TempDir Path dir) {
    assertThat(run(dir, "a", Optional.empty())).isEqualTo(CrashPoints.EXIT_CODE);
    assertThat(run(dir, "b", Optional.empty())).isEqualTo(CrashPoints.EXIT_CODE);
    assertThat(dir.resolve("crash.once")).doesNotExist();
  }

  private static int run(Path dir, String name, Optional<Path> once) {
    ChildJvm.Builder b =
        ChildJvm.builder(TestMains.CrashPointHitter.class)
            .args("demo.point")
            .systemProperty(CrashPoints.PROPERTY, "demo.point@1")
            .log(dir.resolve(name + ".log"));
    once.ifPresent(f -> b.systemProperty(CrashPoints.ONCE_PROPERTY, f.toString()));
    try (ChildJvm child = b.build().start()) {
      int code = child.waitFor(Duration.ofMinutes(2)).orElseThrow();
      assertThat(Files.exists(child.log())).isTrue();
      return code;
    }
  }
}
