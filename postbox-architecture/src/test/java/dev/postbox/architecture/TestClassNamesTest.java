package dev.postbox.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every test class runs: a class under {@code src/test/java} of a module that declares a test (a
 * JUnit Jupiter or jqwik test method) must match one of Surefire's {@code <include>} patterns in
 * the root {@code pom.xml}, else Surefire never runs it and nobody notices (a class of ten jqwik
 * properties once sat unrun for weeks while the README said it ran).
 */
class TestClassNamesTest {

  /** The annotations that make a method a test for the JUnit Platform engines the build uses. */
  private static final Pattern TEST_ANNOTATION =
      Pattern.compile(
          "^\\s*@(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate|Property|Example)"
              + "\\b",
          Pattern.MULTILINE);

  private static final Pattern INCLUDE =
      Pattern.compile("<include>\\*\\*/\\*([A-Za-z]+)\\.java</include>");
  private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");

  @Test
  void everyClassWithTestsMatchesASurefireInclude() throws IOException {
    Path root = Path.of("..").toAbsolutePath().normalize();
    String pom = Files.readString(root.resolve("pom.xml"));
    List<String> suffixes = all(INCLUDE, pom);
    assertThat(suffixes).as("Surefire's include patterns in the root pom").contains("Test", "IT");
    Set<String> unrun = new TreeSet<>();
    int classes = 0;
    for (String module : all(MODULE, pom)) {
      Path tests = root.resolve(module).resolve("src/test/java");
      if (!Files.isDirectory(tests)) {
        continue;
      }
      try (Stream<Path> files = Files.walk(tests)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          String name = f.getFileName().toString().replace(".java", "");
          String source = Files.readString(f);
          if (!TEST_ANNOTATION.matcher(source).find()
              || source.contains("abstract class " + name + " ")) {
            continue; // no tests, or run through its concrete subclasses (checked by their names)
          }
          if (name.endsWith("Snippets")) {
            continue; // the documentation's sample test classes: compiled, compared with the pages
            // by DocSnippetsTest (postbox-demo), never run
          }
          classes++;
          if (suffixes.stream().noneMatch(name::endsWith)) {
            unrun.add(root.relativize(f).toString());
          }
        }
      }
    }
    assertThat(classes).as("test classes found (the walk must see the suite)").isGreaterThan(100);
    assertThat(unrun)
        .as("test classes whose names match no Surefire include (*%s.java)", suffixes)
        .isEmpty();
  }

  @Test
  void theCheckSeesAnUnrunClass() {
    String source = "class Foo {\n  @Property(tries = 10)\n  void p() {}\n}\n";
    assertThat(TEST_ANNOTATION.matcher(source).find()).isTrue();
    assertThat(TEST_ANNOTATION.matcher("class Foo { /* @Test in a comment */ }").find()).isFalse();
  }

  private static List<String> all(Pattern p, String text) {
    List<String> found = new ArrayList<>();
    Matcher m = p.matcher(text);
    while (m.find()) {
      found.add(m.group(1));
    }
    return found;
  }
}
