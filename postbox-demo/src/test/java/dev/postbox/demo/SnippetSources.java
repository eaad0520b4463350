package dev.postbox.demo;

import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.MethodTree;
import com.sun.source.tree.Tree;
import com.sun.source.util.JavacTask;
import com.sun.source.util.SourcePositions;
import com.sun.source.util.Trees;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.tools.JavaCompiler;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

/**
 * The snippet sources ({@code *Snippets.java}) and the bodies a page's marker can name: {@code
 * Class#method} is the text between the braces of that method, {@code Class} the text between the
 * braces of that class (its members). {@code Class} is a top-level class's simple name or a nested
 * class's dotted path from it ({@code TestingSnippets.QuickStart}).
 *
 * <p>The files are parsed with the JDK's own parser (the Compiler Tree API, {@code
 * com.sun.source}), which knows where each declaration begins and ends (annotations, generics,
 * lambdas, nested classes); only parsing, no compilation: the module's test compilation is what
 * compiles them.
 */
final class SnippetSources {

  /** Where a named body is: its file, the body's text, and the line of the file it starts on. */
  record Body(Path file, String text, int firstLine) {}

  private final Map<String, Body> bodies = new HashMap<>();
  private final List<String> problems = new ArrayList<>();

  private SnippetSources() {}

  /**
   * Parses the files; a name declared twice (an overloaded method, a class in two files) is a
   * problem.
   */
  static SnippetSources parse(List<Path> files) {
    SnippetSources sources = new SnippetSources();
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    try (StandardJavaFileManager fm =
        javac.getStandardFileManager(null, null, StandardCharsets.UTF_8)) {
      JavacTask task =
          (JavacTask)
              javac.getTask(
                  null,
                  fm,
                  null,
                  List.of("-proc:none"),
                  null,
                  fm.getJavaFileObjectsFromPaths(files));
      SourcePositions positions = Trees.instance(task).getSourcePositions();
      for (CompilationUnitTree unit : task.parse()) {
        Path file = Path.of(unit.getSourceFile().toUri());
        String text = unit.getSourceFile().getCharContent(true).toString();
        for (Tree type : unit.getTypeDecls()) {
          if (type instanceof ClassTree c) {
            sources.add(file, text, unit, positions, c, c.getSimpleName().toString());
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return sources;
  }

  /** The body a marker names, if a snippet source declares it. */
  Optional<Body> body(String name) {
    return Optional.ofNullable(bodies.get(name));
  }

  /** Names declared more than once, which a marker could not name unambiguously. */
  List<String> problems() {
    return problems;
  }

  private void add(
      Path file,
      String text,
      CompilationUnitTree unit,
      SourcePositions positions,
      ClassTree type,
      String name) {
    int start = (int) positions.getStartPosition(unit, type);
    int end = (int) positions.getEndPosition(unit, type);
    int open = classBodyOpeningBrace(text, start, end);
    put(name, new Body(file, text.substring(open + 1, end - 1), lineOf(text, open)));
    for (Tree member : type.getMembers()) {
      if (member instanceof ClassTree nested) {
        add(file, text, unit, positions, nested, name + "." + nested.getSimpleName());
      } else if (member instanceof MethodTree method && method.getBody() != null) {
        int bodyStart = (int) positions.getStartPosition(unit, method.getBody());
        int bodyEnd = (int) positions.getEndPosition(unit, method.getBody());
        put(
            name + "#" + method.getName(),
            new Body(file, text.substring(bodyStart + 1, bodyEnd - 1), lineOf(text, bodyStart)));
      }
    }
  }

  private void put(String name, Body body) {
    Body earlier = bodies.put(name, body);
    if (earlier != null) {
      problems.add(name + " is declared twice (" + earlier.file() + ", " + body.file() + ")");
    }
  }

  /** The class body's '{': the first one outside parentheses (annotation arguments). */
  private static int classBodyOpeningBrace(String text, int start, int end) {
    int depth = 0;
    for (JavaTokens.Token t : JavaTokens.of(text.substring(start, end))) {
      switch (t.text()) {
        case "(" -> depth++;
        case ")" -> depth--;
        case "{" -> {
          if (depth == 0) {
            return start + t.offset();
          }
        }
        default -> {}
      }
    }
    throw new IllegalStateException("no class body between " + start + " and " + end);
  }

  private static int lineOf(String text, int offset) {
    int line = 1;
    for (int i = 0; i < offset; i++) {
      if (text.charAt(i) == '\n') {
        line++;
      }
    }
    return line;
  }
}
