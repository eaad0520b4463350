package dev.postbox.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code ```java} fenced blocks of one Markdown page, each with the marker comment on the line
 * just before its opening fence (if any). Other fenced blocks ({@code ```bash}, {@code ~~~}) are
 * skipped whole, so a {@code ```java} line shown inside one of them is not taken for a block.
 */
final class JavaBlocks {

  /**
   * One block: the 1-based line of its opening fence, its text (the lines between the fences), and
   * the marker's value ({@code ReadmeSnippets#outbox}, {@code none, <reason>}) if there is one.
   */
  record Block(int fenceLine, String text, Optional<String> marker) {}

  /** A marker with its 1-based line, to find markers that precede no Java block. */
  record Marker(int line, String value) {}

  private static final Pattern FENCE = Pattern.compile("^\\s*(`{3,}|~{3,})\\s*([\\w+-]*).*$");
  private static final Pattern MARKER =
      Pattern.compile("^\\s*<!--\\s*snippet:\\s*(.*?)\\s*-->\\s*$");

  private JavaBlocks() {}

  static List<Block> of(String page) {
    List<Block> blocks = new ArrayList<>();
    String[] lines = page.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      Matcher open = FENCE.matcher(lines[i]);
      if (!open.matches()) {
        continue;
      }
      String fence = open.group(1);
      int close = closingFence(lines, i + 1, fence);
      if (open.group(2).equals("java")) {
        String text = String.join("\n", List.of(lines).subList(i + 1, close));
        blocks.add(new Block(i + 1, text, i > 0 ? marker(lines[i - 1]) : Optional.empty()));
      }
      i = close;
    }
    return blocks;
  }

  /** Every marker comment of the page. */
  static List<Marker> markers(String page) {
    List<Marker> markers = new ArrayList<>();
    String[] lines = page.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      int line = i + 1;
      marker(lines[i]).ifPresent(value -> markers.add(new Marker(line, value)));
    }
    return markers;
  }

  private static Optional<String> marker(String line) {
    Matcher m = MARKER.matcher(line);
    return m.matches() ? Optional.of(m.group(1)) : Optional.empty();
  }

  /** The index of the line closing a fence opened with {@code fence}, or past the end. */
  private static int closingFence(String[] lines, int from, String fence) {
    for (int j = from; j < lines.length; j++) {
      String t = lines[j].strip();
      if (t.length() >= fence.length() && t.chars().allMatch(ch -> ch == fence.charAt(0))) {
        return j;
      }
    }
    return lines.length;
  }
}
