package dev.postbox.testkit.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.testkit.BrokerClassPathException;
import dev.postbox.testkit.internal.MavenJarFetcher.Coordinates;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MavenJarFetcherTest {

  @TempDir Path dir;

  @Test
  void readsCoordinatesFromARepositoryPath() {
    assertThat(Coordinates.parse("org/apache/kafka/kafka_2.13/4.4.0/kafka_2.13-4.4.0.jar"))
        .isEqualTo(new Coordinates("org.apache.kafka", "kafka_2.13", "4.4.0", Optional.empty()));
    assertThat(Coordinates.parse("io/netty/netty-x/4.1/netty-x-4.1-linux-x86_64.jar"))
        .isEqualTo(new Coordinates("io.netty", "netty-x", "4.1", Optional.of("linux-x86_64")));
  }

  @Test
  void refusesPathsThatAreNotRepositoryJars() {
    assertThatThrownBy(() -> Coordinates.parse("a/b.jar"))
        .isInstanceOf(BrokerClassPathException.class);
    assertThatThrownBy(() -> Coordinates.parse("org/x/x/1/y-1.jar"))
        .isInstanceOf(BrokerClassPathException.class)
        .hasMessageContaining("does not match");
  }

  @Test
  void thePomListsEachJarWithoutTransitives() {
    String pom =
        MavenJarFetcher.pom(
            List.of(
                Coordinates.parse("org/a/a/1/a-1.jar"), Coordinates.parse("org/b/b/2/b-2-c.jar")));
    assertThat(pom)
        .contains("<groupId>org.a</groupId><artifactId>a</artifactId><version>1</version>")
        .contains("<classifier>c</classifier>")
        .contains("<exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion>");
  }

  @Test
  void withoutMavenTheErrorSaysSo() {
    MavenJarFetcher fetcher = new MavenJarFetcher(Map.of("PATH", dir.toString()));
    assertThatThrownBy(() -> fetcher.fetch(dir.resolve("repo"), List.of("org/a/a/1/a-1.jar")))
        .isInstanceOf(BrokerClassPathException.class)
        .hasMessageContaining("no `mvn` was found");
  }

  @Test
  void canBeTurnedOff() {
    assertThat(new MavenJarFetcher(Map.of("POSTBOX_KAFKA_FETCH", "false")).enabled()).isFalse();
    assertThat(new MavenJarFetcher(Map.of()).enabled()).isTrue();
  }
}
