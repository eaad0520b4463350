package dev.postbox.demo;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits Java source text into tokens, dropping whitespace and comments, so that two texts can be
 * compared regardless of layout: identifiers and keywords, literals (numbers, strings, text blocks,
 * characters), operators and punctuation. Each token keeps the line it starts on (1-based) and its
 * offset, both within the text given.
 *
 * <p>Written here rather than taken from the JDK: javac's scanner ({@code
 * com.sun.tools.javac.parser}) is not exported, and the public Compiler Tree API gives trees, not
 * tokens; a page's block is a fragment (statements or members) that no parser accepts on its own.
 * It does not check that the text is valid Java (the compiler does that for the snippet sources);
 * it only needs to split both sides the same way. A text block is compared by its content (its
 * incidental indentation stripped), since the page and the formatted source indent it differently.
 */
final class JavaTokens {

  /**
   * One token: its text (a text block's normalised content), the line it starts on and its offset
   * in the text.
   */
  record Token(String text, int line, int offset) {}

  /** Longest first, so that {@code >>>=} is one token and not {@code >>} then {@code >=}. */
  private static final List<String> OPERATORS =
      List.of(
          ">>>=", "<<=", ">>=", ">>>", "...", "->", "::", "++", "--", "&&", "||", "==", "!=", "<=",
          ">=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>");

  private final String src;
  private int pos;
  private int line = 1;

  private JavaTokens(String src) {
    this.src = src;
  }

  static List<Token> of(String source) {
    return new JavaTokens(source).all();
  }

  private List<Token> all() {
    List<Token> tokens = new ArrayList<>();
    while (skipWhitespaceAndComments()) {
      int startLine = line;
      int startOffset = pos;
      tokens.add(new Token(next(), startLine, startOffset));
    }
    return tokens;
  }

  /** Moves past whitespace and comments; false at the end of the text. */
  private boolean skipWhitespaceAndComments() {
    while (pos < src.length()) {
      char c = src.charAt(pos);
      if (Character.isWhitespace(c)) {
        advance(1);
      } else if (src.startsWith("//", pos)) {
        int end = src.indexOf('\n', pos);
        advance((end < 0 ? src.length() : end) - pos);
      } else if (src.startsWith("/*", pos)) {
        int end = src.indexOf("*/", pos + 2);
        advance((end < 0 ? src.length() : end + 2) - pos);
      } else {
        return true;
      }
    }
    return false;
  }

  private String next() {
    char c = src.charAt(pos);
    if (src.startsWith("\"\"\"", pos)) {
      return textBlock();
    }
    if (c == '"' || c == '\'') {
      return quoted(c);
    }
    if (Character.isJavaIdentifierStart(c)) {
      int start = pos;
      while (pos < src.length() && Character.isJavaIdentifierPart(src.charAt(pos))) {
        advance(1);
      }
      return src.substring(start, pos);
    }
    if (Character.isDigit(c)
        || (c == '.' && pos + 1 < src.length() && Character.isDigit(src.charAt(pos + 1)))) {
      return number();
    }
    for (String op : OPERATORS) {
      if (src.startsWith(op, pos)) {
        advance(op.length());
        return op;
      }
    }
    advance(1);
    return String.valueOf(c);
  }

  /** A string or character literal, as written (escapes included). */
  private String quoted(char quote) {
    int start = pos;
    advance(1);
    while (pos < src.length() && src.charAt(pos) != quote && src.charAt(pos) != '\n') {
      advance(src.charAt(pos) == '\\' ? 2 : 1);
    }
    advance(Math.min(1, src.length() - pos));
    return src.substring(start, pos);
  }

  /** A text block, as its content: indentation stripped, escapes translated, quoted again. */
  private String textBlock() {
    int start = pos;
    advance(3);
    while (pos < src.length() && !src.startsWith("\"\"\"", pos)) {
      advance(src.charAt(pos) == '\\' ? 2 : 1);
    }
    advance(Math.min(3, src.length() - pos));
    String raw = src.substring(start, pos);
    int firstLineEnd = raw.indexOf('\n');
    if (firstLineEnd < 0 || !raw.endsWith("\"\"\"")) {
      return raw; // not a well-formed text block: compare it as written
    }
    String content = raw.substring(firstLineEnd + 1, raw.length() - 3);
    return "\"\"\"" + content.stripIndent().translateEscapes() + "\"\"\"";
  }

  /** A numeric literal: digits, letters (hex, suffixes), underscores, dots, exponent signs. */
  private String number() {
    int start = pos;
    boolean hex = src.startsWith("0x", pos) || src.startsWith("0X", pos);
    while (pos < src.length()) {
      char c = src.charAt(pos);
      char prev = pos > start ? src.charAt(pos - 1) : ' ';
      boolean exponentSign =
          (c == '+' || c == '-') && (hex ? prev == 'p' || prev == 'P' : prev == 'e' || prev == 'E');
      if (Character.isLetterOrDigit(c) || c == '_' || c == '.' || exponentSign) {
        advance(1);
      } else {
        break;
      }
    }
    return src.substring(start, pos);
  }

  private void advance(int n) {
    int end = Math.min(src.length(), pos + n);
    for (int i = pos; i < end; i++) {
      if (src.charAt(i) == '\n') {
        line++;
      }
    }
    pos = end;
  }
}
