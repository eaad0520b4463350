package dev.postbox.testkit.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.testkit.BrokerClassPathException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BrokerClassPathTest {

  @TempDir Path home;

  private Path jar(Path repo, String relative) throws Exception {
    Path jar = repo.resolve(relative);
    Files.createDirectories(jar.getParent());
    Files.writeString(jar, "");
    return jar;
  }

  @Test
  void replacesThePlaceholderWithTheDefaultRepository() throws Exception {
    Path repo = home.resolve(".m2/repository");
    Path a = jar(repo, "org/a/a.jar");
    Path b = jar(repo, "org/b/b.jar");
    String cp =
        BrokerClassPath.resolve(
            Map.of(), Optional.empty(), home, Optional.of("$M2/org/a/a.jar:$M2/org/b/b.jar\n"));
    assertThat(cp).isEqualTo(a + ":" + b);
  }

  @Test
  void mavenRepoLocalWinsOverM2RepoWhichWinsOverHome() {
    Path p = Path.of("/p");
    assertThat(BrokerClassPath.localRepository(Map.of("M2_REPO", "/e"), Optional.of("/p"), home))
        .isEqualTo(p);
    assertThat(BrokerClassPath.localRepository(Map.of("M2_REPO", "/e"), Optional.empty(), home))
        .isEqualTo(Path.of("/e"));
    assertThat(BrokerClassPath.localRepository(Map.of(), Optional.empty(), home))
        .isEqualTo(home.resolve(".m2/repository"));
  }

  @Test
  void namesTheMissingJarAndHowToGetIt() throws Exception {
    Path repo = home.resolve("repo");
    jar(repo, "org/a/a.jar");
    assertThatThrownBy(() ->
            BrokerClassPath.resolve(
                Map.of("M2_REPO", repo.toString()),
                Optional.empty(),
                home,
                Optional.of("$M2/org/a/a.jar:$M2/org/k/kafka_2.13-4.4.0.jar")))
        .isInstanceOf(BrokerClassPathException.class)
        .hasMessageContaining(repo.resolve("org/k/kafka_2.13-4.4.0.jar").toString())
        .hasMessageContaining("mvn dependency:resolve -pl postbox-testkit-broker");
  }

  @Test
  void theEnvironmentOverridesEverything() {
    assertThat(
            BrokerClassPath.resolve(
                Map.of("POSTBOX_KAFKA_CLASSPATH", "/opt/kafka/libs/*"),
                Optional.empty(),
                home,
                Optional.empty()))
        .isEqualTo("/opt/kafka/libs/*");
  }

  @Test
  void missingResourceIsExplained() {
    assertThatThrownBy(
            () -> BrokerClassPath.resolve(Map.of(), Optional.empty(), home, Optional.empty()))
        .isInstanceOf(BrokerClassPathException.class)
        .hasMessageContaining("postbox-testkit-broker");
  }

  @Test
  void theRecordedClassPathIsOnTheTestClassPathAndResolves() {
    assertThat(BrokerClassPath.resolve()).contains("kafka_2.13-4.4.0.jar");
  }

  @Test
  void missingJarsAreFetchedIntoTheRepositoryThenUsed() throws Exception {
    Path repo = home.resolve("repo");
    jar(repo, "org/a/a/1/a-1.jar");
    java.util.List<java.util.List<String>> asked = new java.util.ArrayList<>();
    String cp =
        BrokerClassPath.resolve(
            Map.of(),
            repo,
            Optional.of("$M2/org/a/a/1/a-1.jar:$M2/org/k/k/2/k-2.jar"),
            Optional.of((r, missing) -> {
              asked.add(missing);
              missing.forEach(m -> {
                try {
                  jar(r, m);
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              });
            }));
    assertThat(asked).containsExactly(java.util.List.of("org/k/k/2/k-2.jar"));
    assertThat(cp)
        .isEqualTo(repo.resolve("org/a/a/1/a-1.jar") + ":" + repo.resolve("org/k/k/2/k-2.jar"));
  }

  @Test
  void aFetchThatBringsNothingStillNamesTheMissingJar() {
    Path repo = home.resolve("repo");
    assertThatThrownBy(() ->
            BrokerClassPath.resolve(
                Map.of(),
                repo,
                Optional.of("$M2/org/k/k/2/k-2.jar"),
                Optional.of((r, missing) -> {})))
        .isInstanceOf(BrokerClassPathException.class)
        .hasMessageContaining(repo.resolve("org/k/k/2/k-2.jar").toString())
        .hasMessageContaining("POSTBOX_KAFKA_FETCH");
  }
}
