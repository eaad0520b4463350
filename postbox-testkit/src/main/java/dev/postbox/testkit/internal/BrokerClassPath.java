package dev.postbox.testkit.internal;

import dev.postbox.testkit.BrokerClassPathException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The class path of the Kafka broker JVM: the list that {@code postbox-testkit-broker} recorded in
 * its jar, with {@code $M2} replaced by the local Maven repository, or the whole class path from
 * the environment variable {@value #OVERRIDE_ENV}.
 */
public final class BrokerClassPath {

  /** Classpath resource written by {@code postbox-testkit-broker}. */
  public static final String RESOURCE = "dev/postbox/testkit/broker/classpath.txt";

  /** Environment variable that replaces the whole broker class path. */
  public static final String OVERRIDE_ENV = "POSTBOX_KAFKA_CLASSPATH";

  /** Placeholder for the local Maven repository in {@link #RESOURCE}. */
  public static final String M2_PLACEHOLDER = "$M2";

  private static final String FETCH_HINT =
      "Let the test kit fetch them (unset "
          + MavenJarFetcher.FETCH_ENV
          + "=false; it runs your `mvn`), fetch them with `mvn dependency:resolve -pl"
          + " postbox-testkit-broker` in the Postbox source tree, or set "
          + OVERRIDE_ENV
          + " to a class path that holds the Kafka broker (kafka_2.13, kafka-tools and an slf4j"
          + " binding).";

  /** Fetches jars missing from the local repository. */
  @FunctionalInterface
  public interface JarFetcher {
    /** Fetches the jars (paths relative to {@code repo}) into {@code repo}, or throws. */
    void fetch(Path repo, List<String> relativePaths);
  }

  private BrokerClassPath() {}

  /** Resolves the class path from this JVM's environment, system properties and class path. */
  public static String resolve() {
    MavenJarFetcher fetcher = new MavenJarFetcher(System.getenv());
    Path home = Path.of(System.getProperty("user.home"));
    Path repo =
        MavenLocalRepository.find(
            System.getenv(), key -> Optional.ofNullable(System.getProperty(key)), home);
    return resolve(
        System.getenv(),
        repo,
        readResource(),
        fetcher.enabled() ? Optional.of(fetcher::fetch) : Optional.empty());
  }

  /**
   * Resolves the class path without fetching (for tests of the lookup).
   *
   * @param env the environment ({@value #OVERRIDE_ENV}, {@code M2_REPO})
   * @param mavenRepoLocal the {@code maven.repo.local} system property
   * @param home the user's home directory (for {@code ~/.m2/repository})
   * @param recorded the content of {@link #RESOURCE}, if it is on the class path
   */
  public static String resolve(
      Map<String, String> env,
      Optional<String> mavenRepoLocal,
      Path home,
      Optional<String> recorded) {
    return resolve(env, localRepository(env, mavenRepoLocal, home), recorded, Optional.empty());
  }

  /**
   * Resolves the class path, fetching missing jars with {@code fetcher} when one is given.
   *
   * @param env the environment ({@value #OVERRIDE_ENV})
   * @param repo the local Maven repository
   * @param recorded the content of {@link #RESOURCE}, if it is on the class path
   * @param fetcher fetches missing jars into {@code repo}
   * @throws BrokerClassPathException if there is no override and the resource is missing or names
   *     jars that do not exist (after the fetch, if any)
   */
  public static String resolve(
      Map<String, String> env, Path repo, Optional<String> recorded, Optional<JarFetcher> fetcher) {
    String override = env.get(OVERRIDE_ENV);
    if (override != null && !override.isBlank()) {
      return override.trim();
    }
    String raw =
        recorded.orElseThrow(() ->
            new BrokerClassPathException(
                "Cannot find "
                    + RESOURCE
                    + " on the class path: add the dependency"
                    + " dev.postbox:postbox-testkit-broker (postbox-testkit declares it), or set "
                    + OVERRIDE_ENV
                    + "."));
    List<String> relative = new ArrayList<>();
    for (String entry : raw.trim().split(":")) {
      if (!entry.isBlank()) {
        relative.add(
            entry.startsWith(M2_PLACEHOLDER + "/")
                ? entry.substring(M2_PLACEHOLDER.length() + 1)
                : entry);
      }
    }
    if (relative.isEmpty()) {
      throw new BrokerClassPathException(RESOURCE + " is empty. " + FETCH_HINT);
    }
    List<String> missing = missing(repo, relative);
    if (!missing.isEmpty() && fetcher.isPresent()) {
      fetcher.get().fetch(repo, missing);
      missing = missing(repo, relative);
    }
    if (!missing.isEmpty()) {
      throw new BrokerClassPathException(
          "The Kafka broker jar "
              + repo.resolve(missing.get(0))
              + (missing.size() > 1 ? " (and " + (missing.size() - 1) + " more)" : "")
              + " is missing from the local Maven repository "
              + repo
              + ". "
              + FETCH_HINT);
    }
    return String.join(":", relative.stream().map(r -> repo.resolve(r).toString()).toList());
  }

  private static List<String> missing(Path repo, List<String> relative) {
    return relative.stream().filter(r -> !Files.exists(repo.resolve(r))).toList();
  }

  /** The local Maven repository: {@code maven.repo.local}, else {@code M2_REPO}, else ~/.m2. */
  public static Path localRepository(
      Map<String, String> env, Optional<String> mavenRepoLocal, Path home) {
    Optional<String> fromProperty = mavenRepoLocal.filter(s -> !s.isBlank());
    if (fromProperty.isPresent()) {
      return Path.of(fromProperty.get());
    }
    String fromEnv = env.get("M2_REPO");
    if (fromEnv != null && !fromEnv.isBlank()) {
      return Path.of(fromEnv);
    }
    return home.resolve(".m2").resolve("repository");
  }

  private static Optional<String> readResource() {
    ClassLoader loader = BrokerClassPath.class.getClassLoader();
    try (InputStream in = loader.getResourceAsStream(RESOURCE)) {
      return in == null
          ? Optional.empty()
          : Optional.of(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + RESOURCE, e);
    }
  }
}
