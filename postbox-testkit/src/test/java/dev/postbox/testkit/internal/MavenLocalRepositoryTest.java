package dev.postbox.testkit.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MavenLocalRepositoryTest {

  @TempDir Path home;

  @Test
  void theBuildsRepositoryFromSurefireWins() {
    Map<String, String> props = Map.of("localRepository", "/build/repo");
    assertThat(
            MavenLocalRepository.find(
                Map.of("M2_REPO", "/e"), k -> Optional.ofNullable(props.get(k)), home))
        .isEqualTo(Path.of("/build/repo"));
  }

  @Test
  void readsTheUsersSettingsWithExpansions() throws Exception {
    Files.createDirectories(home.resolve(".m2"));
    Files.writeString(
        home.resolve(".m2/settings.xml"),
        "<settings><localRepository>${user.home}/repos/${env.TEAM}</localRepository></settings>");
    assertThat(MavenLocalRepository.find(Map.of("TEAM", "x"), k -> Optional.empty(), home))
        .isEqualTo(home.resolve("repos/x"));
  }

  @Test
  void fallsBackToTheInstallationsSettingsThenTheDefault() throws Exception {
    Path maven = home.resolve("maven");
    Files.createDirectories(maven.resolve("conf"));
    Files.writeString(
        maven.resolve("conf/settings.xml"),
        "<settings><localRepository>/shared/repo</localRepository></settings>");
    assertThat(
            MavenLocalRepository.find(
                Map.of("MAVEN_HOME", maven.toString()), k -> Optional.empty(), home))
        .isEqualTo(Path.of("/shared/repo"));
    assertThat(MavenLocalRepository.find(Map.of(), k -> Optional.empty(), home))
        .isEqualTo(home.resolve(".m2/repository"));
  }
}
