package dev.postbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every Java code sample of the README and the documentation site ({@code docs/**}{@code /*.md}) is
 * the text of a snippet source that the build compiles, so a sample cannot name a method that does
 * not exist or an API that has changed.
 *
 * <p>The rule: a {@code ```java} fenced block must have, on the line just before its opening fence,
 * a marker comment (invisible in the rendered page):
 *
 * <ul>
 *   <li>{@code <!-- snippet: Class#method -->}: the block is the body of that method, the text
 *       between its braces (a block of statements);
 *   <li>{@code <!-- snippet: Class -->}: the block is the body of that class, the text between its
 *       braces (a block of declarations: one or more classes, fields, methods). {@code Class} is a
 *       top-level class's simple name or a nested class's dotted path from it ({@code
 *       TestingSnippets.QuickStart}); a block showing a whole class {@code OrderFlowTest} names a
 *       nested class that holds exactly that class;
 *   <li>{@code <!-- snippet: none, <reason> -->}: the block is not compiled (kept rare: an example
 *       of what not to write).
 * </ul>
 *
 * The classes are those of the {@code *Snippets.java} files under a module's {@code src/test/java}
 * (each compiled by its module's test compilation: postbox-demo's for plain Java and the test kit,
 * postbox-spring-boot-starter's for Spring). The block and the body are compared as Java token
 * streams ({@link JavaTokens}): whitespace, line breaks and comments do not count, so the page
 * keeps its hand layout and explanatory comments while the source is formatted by
 * google-java-format. A difference fails the test naming the page and line, the snippet, and the
 * first differing token with the tokens around it on both sides. A marker that precedes no {@code
 * ```java} block fails too.
 */
class DocSnippetsTest {

  /** Tokens of context shown on each side of a difference. */
  private static final int CONTEXT = 6;

  private final Path root = projectRoot();

  @Test
  void everyJavaBlockOfTheDocsIsACompiledSnippet() throws IOException {
    SnippetSources sources = SnippetSources.parse(snippetFiles());
    List<String> problems = new ArrayList<>(sources.problems());
    int checked = 0;
    int uncompiled = 0;
    List<Path> pages = pages();
    for (Path page : pages) {
      String name = root.relativize(page).toString();
      String text = Files.readString(page);
      List<JavaBlocks.Block> blocks = JavaBlocks.of(text);
      for (JavaBlocks.Block block : blocks) {
        String where = name + ":" + block.fenceLine();
        if (block.marker().isEmpty()) {
          problems.add(
              where
                  + ": a ```java block without <!-- snippet: Class#method --> on the line before");
        } else if (block.marker().get().startsWith("none")) {
          if (!block.marker().get().matches("none,\\s*\\S.*")) {
            problems.add(where + ": <!-- snippet: none, <reason> --> needs its reason");
          }
          uncompiled++;
        } else {
          checked++;
          compare(where, block, sources).ifPresent(problems::add);
        }
      }
      List<Integer> blockMarkerLines = blocks.stream().map(b -> b.fenceLine() - 1).toList();
      for (JavaBlocks.Marker marker : JavaBlocks.markers(text)) {
        if (!blockMarkerLines.contains(marker.line())) {
          problems.add(
              name
                  + ":"
                  + marker.line()
                  + ": marker "
                  + marker.value()
                  + " is not on the line just before a ```java fence");
        }
      }
    }
    System.out.printf(
        "%d pages, %d java blocks checked against snippets, %d marked as not compiled%n",
        pages.size(), checked, uncompiled);
    assertThat(problems)
        .as("Java blocks of the docs that are not their snippet (%d checked)", checked)
        .isEmpty();
    assertThat(checked).as("java blocks found in README.md and docs/").isPositive();
  }

  /** The first difference between the block and the body its marker names, if any. */
  private Optional<String> compare(String where, JavaBlocks.Block block, SnippetSources sources) {
    String snippet = block.marker().orElseThrow();
    Optional<SnippetSources.Body> found = sources.body(snippet);
    if (found.isEmpty()) {
      return Optional.of(
          where + ": marker names " + snippet + ", which no *Snippets.java source declares");
    }
    SnippetSources.Body body = found.get();
    List<JavaTokens.Token> page = JavaTokens.of(block.text());
    List<JavaTokens.Token> source = JavaTokens.of(body.text());
    int i = 0;
    while (i < page.size()
        && i < source.size()
        && page.get(i).text().equals(source.get(i).text())) {
      i++;
    }
    if (i == page.size() && i == source.size()) {
      return Optional.empty();
    }
    int pageLine =
        block.fenceLine() + (i < page.size() ? page.get(i).line() : lastLine(block.text()) + 1);
    int sourceLine =
        body.firstLine() - 1 + (i < source.size() ? source.get(i).line() : lastLine(body.text()));
    return Optional.of(
        String.format(
            "%s: the block differs from %s (%s:%d) at token %d, page line %d:%n"
                + "    page:   %s%n    source: %s",
            where,
            snippet,
            root.relativize(body.file()),
            sourceLine,
            i + 1,
            pageLine,
            around(page, i),
            around(source, i)));
  }

  /**
   * The tokens around index {@code i}, the one at {@code i} in brackets (or where one is missing).
   */
  private static String around(List<JavaTokens.Token> tokens, int i) {
    String before =
        tokens.subList(Math.max(0, i - CONTEXT), Math.min(i, tokens.size())).stream()
            .map(JavaTokens.Token::text)
            .collect(Collectors.joining(" "));
    String at = i < tokens.size() ? "[" + tokens.get(i).text() + "]" : "[<end>]";
    String after =
        i < tokens.size()
            ? tokens.subList(i + 1, Math.min(tokens.size(), i + 1 + CONTEXT)).stream()
                .map(JavaTokens.Token::text)
                .collect(Collectors.joining(" "))
            : "";
    return (before + " " + at + " " + after).strip();
  }

  private static int lastLine(String text) {
    return (int) text.chars().filter(c -> c == '\n').count() + 1;
  }

  private List<Path> pages() throws IOException {
    List<Path> pages = new ArrayList<>();
    pages.add(root.resolve("README.md"));
    try (Stream<Path> files = Files.walk(root.resolve("docs"))) {
      files.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    return pages;
  }

  /** The {@code *Snippets.java} files under every module's {@code src/test/java}. */
  private List<Path> snippetFiles() throws IOException {
    List<Path> files = new ArrayList<>();
    try (Stream<Path> modules = Files.list(root)) {
      for (Path tests :
          modules
              .map(m -> m.resolve("src/test/java"))
              .filter(Files::isDirectory)
              .sorted()
              .toList()) {
        try (Stream<Path> walk = Files.walk(tests)) {
          walk.filter(p -> p.getFileName().toString().endsWith("Snippets.java"))
              .sorted()
              .forEach(files::add);
        }
      }
    }
    assertThat(files).as("snippet sources under */src/test/java").isNotEmpty();
    return files;
  }

  private static Path projectRoot() {
    Path here = Path.of("").toAbsolutePath();
    for (Path dir = here; dir != null; dir = dir.getParent()) {
      if (Files.exists(dir.resolve("mkdocs.yml")) && Files.exists(dir.resolve("postbox-core"))) {
        return dir;
      }
    }
    throw new IllegalStateException("no project root (mkdocs.yml, postbox-core) above " + here);
  }
}
