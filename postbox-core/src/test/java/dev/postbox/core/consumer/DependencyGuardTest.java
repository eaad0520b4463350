package dev.postbox.core.consumer;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * What core does for a {@link DependencyGuard}: validate the settings, and find the breakers in
 * {@code postbox-resilience4j} (not on core's class path, so here the builder says to add it). The
 * breakers themselves are tested in that module.
 */
class DependencyGuardTest {

  @Test
  void buildFailsFastOnBadSettings() {
    assertThatThrownBy(() -> DependencyGuard.builder().failureRateThreshold(0).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> DependencyGuard.builder().failureRateThreshold(101).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> DependencyGuard.builder().minimumCalls(0).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(
            () -> DependencyGuard.builder().minimumCalls(30).slidingWindowCalls(20).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("minimumCalls");
    assertThatThrownBy(() -> DependencyGuard.builder().waitInOpenState(Duration.ZERO).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> DependencyGuard.builder().probeCalls(0).build())
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void withoutTheModuleTheBuilderSaysWhichOneToAdd() {
    assertThatThrownBy(DependencyGuard::defaults)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("postbox-resilience4j");
  }

  @Test
  void settingsAreCheckedWhereverTheyAreMade() {
    assertThatThrownBy(() ->
            new DependencyGuard.Settings(
                50, 10, 20, Duration.ZERO, 1, t -> true, java.time.Clock.systemUTC()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("waitInOpenState");
  }
}
