package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The start-up check of kafka-clients and flyway-core against the versions Postbox is built with:
 * Spring Boot 4.0.7's managed versions are refused naming the property to pin, the build's own
 * class path passes, and newer or absent libraries pass.
 */
class DependencyVersionsTest {

  private static final Map<String, String> BUILT =
      Map.of("kafka-clients", "4.4.0", "flyway-core", "13.12.2");

  /** A class loader (no parent) whose path holds only Kafka's and Flyway's version resources. */
  private static ClassLoader libraries(Path dir, String kafka, String flyway) throws Exception {
    if (kafka != null) {
      Files.createDirectories(dir.resolve("kafka"));
      Files.writeString(
          dir.resolve("kafka/kafka-version.properties"), "commitId=abc\nversion=" + kafka + "\n");
    }
    if (flyway != null) {
      Files.createDirectories(dir.resolve("org/flywaydb/core/internal"));
      Files.writeString(dir.resolve("org/flywaydb/core/internal/version.txt"), flyway);
    }
    return new URLClassLoader(new URL[] {dir.toUri().toURL()}, null);
  }

  @Test
  void springBootsManagedVersionsAreRefusedNamingThePin(@TempDir Path dir) throws Exception {
    List<String> problems = DependencyVersions.problems(libraries(dir, "4.1.2", "11.14.1"), BUILT);
    assertThat(problems).hasSize(2);
    assertThat(problems.get(0))
        .contains("kafka-clients 4.1.2", "built and tested with 4.4.0")
        .contains("<kafka.version>4.4.0</kafka.version>", "postbox.dependency-check: false");
    assertThat(problems.get(1))
        .contains("flyway-core 11.14.1", "<flyway.version>13.12.2</flyway.version>");
  }

  @Test
  void newerOrAbsentLibrariesAndOlderPatchesPass(@TempDir Path dir) throws Exception {
    assertThat(DependencyVersions.problems(libraries(dir, "4.4.0", "14.0.1"), BUILT)).isEmpty();
    assertThat(DependencyVersions.problems(libraries(dir.resolve("none"), null, null), BUILT))
        .isEmpty();
    assertThat(DependencyVersions.older("4.4.0", "4.4.1")).isFalse();
    assertThat(DependencyVersions.older("5.0.0", "4.4.0")).isFalse();
    assertThat(DependencyVersions.older("3.9.1", "4.4.0")).isTrue();
    assertThat(DependencyVersions.older("unknown", "4.4.0")).isFalse();
  }

  @Test
  void theBuildsOwnClassPathPassesAndTheBuiltVersionsAreFiltered() {
    Map<String, String> built = DependencyVersions.builtWith();
    assertThat(built.get("kafka-clients")).matches("\\d+\\.\\d+\\.\\d+.*");
    assertThat(built.get("flyway-core")).matches("\\d+\\.\\d+\\.\\d+.*");
    assertThat(DependencyVersions.problems(getClass().getClassLoader(), built)).isEmpty();
  }
}
