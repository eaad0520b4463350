package dev.postbox.spring;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Refuses, at start-up, a kafka-clients or flyway-core older than the version Postbox is built and
 * tested with: an application under {@code spring-boot-starter-parent} gets Spring Boot's managed
 * versions (Boot 4.0.7: Kafka 4.1.2, Flyway 11.14.1) unless it names Postbox's, and would run
 * Postbox on clients it was never tested with. The message names the Maven property to set. A newer
 * version passes (only major.minor is compared: an older patch release passes too). The versions
 * are read as resources (Kafka's {@code kafka/kafka-version.properties}, Flyway's {@code
 * org/flywaydb/core/internal/version.txt}), so no class of either is loaded; an absent library is
 * not checked (a RabbitMQ application without Kafka).
 */
final class DependencyVersions {

  /** The resource with the versions of the build ({@code artifact=version}). */
  static final String BUILT_WITH = "META-INF/postbox/dependency-versions.properties";

  private static final Pattern MAJOR_MINOR = Pattern.compile("^(\\d+)\\.(\\d+)");

  /** A library checked: its artifact, the Maven property that pins it, how to read its version. */
  private record Library(String artifact, String property, String resource, boolean keyValue) {}

  private static final List<Library> LIBRARIES =
      List.of(
          new Library("kafka-clients", "kafka.version", "kafka/kafka-version.properties", true),
          new Library(
              "flyway-core", "flyway.version", "org/flywaydb/core/internal/version.txt", false));

  private DependencyVersions() {}

  /** The versions Postbox was built with, by artifact. */
  static Map<String, String> builtWith() {
    Properties p = new Properties();
    try (InputStream in =
        DependencyVersions.class.getClassLoader().getResourceAsStream(BUILT_WITH)) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Map<String, String> out = new java.util.LinkedHashMap<>();
    p.forEach((k, v) -> out.put(k.toString(), v.toString()));
    return out;
  }

  /** One problem per library on {@code classLoader}'s path older than in {@code builtWith}. */
  static List<String> problems(ClassLoader classLoader, Map<String, String> builtWith) {
    List<String> out = new ArrayList<>();
    for (Library lib : LIBRARIES) {
      String built = builtWith.getOrDefault(lib.artifact(), "");
      Optional<String> present = version(classLoader, lib);
      if (present.isPresent() && older(present.get(), built)) {
        out.add(
            lib.artifact()
                + " "
                + present.get()
                + " is on the class path, but Postbox is built and tested with "
                + built
                + " (Spring Boot's dependency management brings an older one): set <"
                + lib.property()
                + ">"
                + built
                + "</"
                + lib.property()
                + "> in the application's pom.xml (Gradle: ext['"
                + lib.property()
                + "'] = '"
                + built
                + "'), or postbox.dependency-check: false to run on it untested");
      }
    }
    return out;
  }

  private static Optional<String> version(ClassLoader classLoader, Library lib) {
    try (InputStream in = classLoader.getResourceAsStream(lib.resource())) {
      if (in == null) {
        return Optional.empty();
      }
      if (lib.keyValue()) {
        Properties p = new Properties();
        p.load(in);
        return Optional.ofNullable(p.getProperty("version")).map(String::strip);
      }
      return Optional.of(new String(in.readAllBytes(), StandardCharsets.UTF_8).strip());
    } catch (IOException e) {
      return Optional.empty(); // unreadable: not checked
    }
  }

  /** Whether {@code present}'s major.minor is below {@code built}'s (unknown: not older). */
  static boolean older(String present, String built) {
    Matcher p = MAJOR_MINOR.matcher(present);
    Matcher b = MAJOR_MINOR.matcher(built);
    if (!p.find() || !b.find()) {
      return false;
    }
    int pMajor = Integer.parseInt(p.group(1));
    int bMajor = Integer.parseInt(b.group(1));
    if (pMajor != bMajor) {
      return pMajor < bMajor;
    }
    return Integer.parseInt(p.group(2)) < Integer.parseInt(b.group(2));
  }
}
