package dev.postbox.testkit.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.NodeList;

/**
 * Finds the local Maven repository the way Maven does for the build that runs the tests: the {@code
 * maven.repo.local} system property, then {@code localRepository} (which Surefire and Failsafe set
 * in the test JVM to the build's repository), then {@code M2_REPO}, then {@code <localRepository>}
 * of the user's and the installation's {@code settings.xml}, then {@code ~/.m2/repository}.
 *
 * <p>Reads {@code settings.xml} with the JDK's XML parser (no Maven library on a test class path);
 * only the one element, with {@code ${user.home}} and {@code ${env.X}} expanded as Maven does.
 */
public final class MavenLocalRepository {

  private MavenLocalRepository() {}

  /**
   * The local repository.
   *
   * @param env the environment ({@code M2_REPO}, {@code MAVEN_HOME}, {@code M2_HOME})
   * @param properties system properties ({@code maven.repo.local}, {@code localRepository}, {@code
   *     maven.home})
   * @param home the user's home directory
   */
  public static Path find(
      Map<String, String> env, Function<String, Optional<String>> properties, Path home) {
    for (String key : List.of("maven.repo.local", "localRepository")) {
      Optional<String> value = properties.apply(key).filter(s -> !s.isBlank());
      if (value.isPresent()) {
        return Path.of(value.get());
      }
    }
    String fromEnv = env.get("M2_REPO");
    if (fromEnv != null && !fromEnv.isBlank()) {
      return Path.of(fromEnv);
    }
    for (Path settings : settingsFiles(env, properties, home)) {
      Optional<String> configured = fromSettings(settings, env, home);
      if (configured.isPresent()) {
        return Path.of(configured.get());
      }
    }
    return home.resolve(".m2").resolve("repository");
  }

  private static List<Path> settingsFiles(
      Map<String, String> env, Function<String, Optional<String>> properties, Path home) {
    List<Path> files = new ArrayList<>();
    files.add(home.resolve(".m2").resolve("settings.xml"));
    properties.apply("maven.home").ifPresent(m -> files.add(Path.of(m, "conf", "settings.xml")));
    for (String key : List.of("MAVEN_HOME", "M2_HOME")) {
      String value = env.get(key);
      if (value != null && !value.isBlank()) {
        files.add(Path.of(value, "conf", "settings.xml"));
      }
    }
    return files;
  }

  /** The expanded {@code <localRepository>} of one settings file, if it has one. */
  static Optional<String> fromSettings(Path settings, Map<String, String> env, Path home) {
    if (!Files.isRegularFile(settings)) {
      return Optional.empty();
    }
    try {
      DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
      factory.setNamespaceAware(false);
      factory.setExpandEntityReferences(false);
      factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
      Document document = factory.newDocumentBuilder().parse(settings.toFile());
      NodeList nodes = document.getDocumentElement().getChildNodes();
      for (int i = 0; i < nodes.getLength(); i++) {
        if ("localRepository".equals(nodes.item(i).getNodeName())) {
          String text = nodes.item(i).getTextContent().trim();
          return text.isEmpty() ? Optional.empty() : Optional.of(expand(text, env, home));
        }
      }
      return Optional.empty();
    } catch (IOException | javax.xml.parsers.ParserConfigurationException e) {
      return Optional.empty();
    } catch (org.xml.sax.SAXException e) {
      // Maven itself refuses a malformed settings.xml, with a clearer message than ours
      return Optional.empty();
    }
  }

  private static String expand(String text, Map<String, String> env, Path home) {
    String expanded = text.replace("${user.home}", home.toString());
    for (Map.Entry<String, String> e : env.entrySet()) {
      expanded = expanded.replace("${env." + e.getKey() + "}", e.getValue());
    }
    return expanded;
  }
}
