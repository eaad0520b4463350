package dev.postbox.testkit.internal;

import dev.postbox.testkit.BrokerClassPathException;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Fetches jars that are missing from the local Maven repository by running the user's own Maven
 * ({@code mvn} from {@code MAVEN_HOME}, {@code M2_HOME} or the {@code PATH}) on a throw-away POM
 * that lists them: Maven then applies the user's {@code settings.xml} (mirrors, proxies,
 * credentials, offline mode) exactly as for their build, which a hand-written HTTP download would
 * not.
 */
public final class MavenJarFetcher {

  /** Environment variable that turns the fetch off ({@code false}). */
  public static final String FETCH_ENV = "POSTBOX_KAFKA_FETCH";

  private static final String DEPENDENCY_PLUGIN =
      "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:resolve";
  private static final long TIMEOUT_MINUTES = 15;

  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(MavenJarFetcher.class);

  private final Map<String, String> env;

  public MavenJarFetcher(Map<String, String> env) {
    this.env = Map.copyOf(env);
  }

  /** Whether fetching is allowed by the environment. */
  public boolean enabled() {
    return !"false".equalsIgnoreCase(env.getOrDefault(FETCH_ENV, "true").trim());
  }

  /**
   * Fetches the jars into {@code repo}.
   *
   * @param repo the local repository
   * @param relativePaths the jars' paths inside it ({@code group/dirs/artifact/version/file.jar})
   * @throws BrokerClassPathException if Maven cannot be found or fails (its output's tail is in the
   *     message)
   */
  public void fetch(Path repo, List<String> relativePaths) {
    List<Coordinates> artifacts = relativePaths.stream().map(Coordinates::parse).toList();
    Path mvn =
        maven()
            .orElseThrow(() ->
                new BrokerClassPathException(
                    "The Kafka broker's jars are missing from "
                        + repo
                        + " and no `mvn` was found (MAVEN_HOME, M2_HOME or PATH) to fetch them."));
    Path work;
    try {
      work = Files.createTempDirectory("postbox-broker-fetch");
      Files.writeString(work.resolve("pom.xml"), pom(artifacts), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new BrokerClassPathException("Cannot write the fetch POM: " + e.getMessage());
    }
    Path log = work.resolve("mvn.log");
    List<String> command =
        List.of(
            mvn.toString(),
            "-B",
            "-ntp",
            "-f",
            work.resolve("pom.xml").toString(),
            "-Dmaven.repo.local=" + repo,
            DEPENDENCY_PLUGIN);
    LOG.info(
        "Fetching {} Kafka broker jars into {} with {} (first use; {}=false turns this off)",
        artifacts.size(),
        repo,
        mvn,
        FETCH_ENV);
    int exit;
    try {
      Process process =
          new ProcessBuilder(command)
              .directory(work.toFile())
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      if (!process.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES)) {
        process.destroyForcibly();
        throw new BrokerClassPathException(
            "Fetching the Kafka broker's jars did not finish in "
                + TIMEOUT_MINUTES
                + " minutes; see "
                + log);
      }
      exit = process.exitValue();
    } catch (IOException e) {
      throw new BrokerClassPathException("Cannot run " + mvn + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BrokerClassPathException("Interrupted while fetching the Kafka broker's jars");
    }
    if (exit != 0) {
      throw new BrokerClassPathException(
          "Maven could not fetch the Kafka broker's jars into "
              + repo
              + " (offline, or no repository serves them?). Set "
              + BrokerClassPath.OVERRIDE_ENV
              + " to a class path holding the broker instead. Maven said:\n"
              + tail(log));
    }
  }

  private Optional<Path> maven() {
    for (String key : List.of("MAVEN_HOME", "M2_HOME")) {
      String home = env.get(key);
      if (home != null && !home.isBlank() && Files.isExecutable(Path.of(home, "bin", "mvn"))) {
        return Optional.of(Path.of(home, "bin", "mvn"));
      }
    }
    String path = env.getOrDefault("PATH", "");
    for (String dir : path.split(File.pathSeparator)) {
      if (!dir.isBlank() && Files.isExecutable(Path.of(dir, "mvn"))) {
        return Optional.of(Path.of(dir, "mvn"));
      }
    }
    return Optional.empty();
  }

  static String pom(List<Coordinates> artifacts) {
    StringBuilder pom = new StringBuilder();
    pom.append("<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n")
        .append("  <modelVersion>4.0.0</modelVersion>\n")
        .append("  <groupId>dev.postbox.fetch</groupId><artifactId>broker-jars</artifactId>")
        .append("<version>1</version><packaging>pom</packaging>\n")
        .append("  <dependencies>\n");
    for (Coordinates a : artifacts) {
      pom.append("    <dependency><groupId>")
          .append(a.groupId())
          .append("</groupId><artifactId>")
          .append(a.artifactId())
          .append("</artifactId><version>")
          .append(a.version())
          .append("</version>");
      a.classifier().ifPresent(c -> pom.append("<classifier>").append(c).append("</classifier>"));
      // the recorded list is already the whole class path: take nothing transitively
      pom.append(
          "<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId>"
              + "</exclusion></exclusions></dependency>\n");
    }
    return pom.append("  </dependencies>\n</project>\n").toString();
  }

  private static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    } catch (IOException e) {
      return "(no output: " + e.getMessage() + ")";
    }
  }

  /** Maven coordinates of a jar, read from its path in a local repository. */
  record Coordinates(
      String groupId, String artifactId, String version, Optional<String> classifier) {

    static Coordinates parse(String relativePath) {
      String[] parts = relativePath.replace('\\', '/').split("/");
      if (parts.length < 4 || !parts[parts.length - 1].endsWith(".jar")) {
        throw new BrokerClassPathException("Not a jar path in a Maven repository: " + relativePath);
      }
      String file = parts[parts.length - 1];
      String version = parts[parts.length - 2];
      String artifact = parts[parts.length - 3];
      List<String> group = new ArrayList<>(List.of(parts).subList(0, parts.length - 3));
      String prefix = artifact + "-" + version;
      if (!file.startsWith(prefix)) {
        throw new BrokerClassPathException(
            "Jar " + file + " does not match its folder " + artifact + "/" + version);
      }
      String rest = file.substring(prefix.length(), file.length() - ".jar".length());
      Optional<String> classifier =
          rest.startsWith("-") ? Optional.of(rest.substring(1)) : Optional.empty();
      return new Coordinates(String.join(".", group), artifact, version, classifier);
    }
  }
}
