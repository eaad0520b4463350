package dev.postbox.core.codec;

/**
 * The one reversible escaping of text a store cannot hold as it is. PostgreSQL's {@code text}
 * refuses the NUL character (U+0000), and its driver turns a lone UTF-16 surrogate into {@code ?};
 * both can arrive in anything a producer writes (a header name, a CloudEvents attribute, an error
 * message quoting them). Text without them is stored unchanged; text with them is stored as {@value
 * #MARKER} followed by the text with each backslash doubled, each NUL written {@code \0} and each
 * lone surrogate written {@code \}{@code uXXXX} (four upper-case hex digits). Text that happens to
 * start with the marker is escaped too, so {@link #decode} gives back exactly what {@link #encode}
 * was given, for every string. {@link #ascii} escapes further, to printable ASCII, for a store that
 * refused even the encoded form.
 *
 * <p>Stateless and thread-safe.
 */
public final class StoredText {

  /** What an escaped text starts with. */
  public static final String MARKER = "\\~";

  private StoredText() {}

  /** {@code text} as a store can hold it: unchanged unless it needs escaping (null stays null). */
  public static String encode(String text) {
    if (text == null || !needsEscape(text)) {
      return text;
    }
    return escape(text, false);
  }

  /**
   * {@code text} escaped to printable ASCII (plus tab and line breaks): every other character is
   * written {@code \}{@code uXXXX}. Always starts with the marker; {@link #decode} reverses it.
   */
  public static String ascii(String text) {
    return text == null ? null : escape(text, true);
  }

  /** Whether {@link #encode} changes {@code text}. */
  public static boolean needsEscape(String text) {
    if (text.startsWith(MARKER)) {
      return true;
    }
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == 0) {
        return true;
      }
      if (Character.isSurrogate(c)) {
        if (Character.isHighSurrogate(c)
            && i + 1 < text.length()
            && Character.isLowSurrogate(text.charAt(i + 1))) {
          i++;
        } else {
          return true;
        }
      }
    }
    return false;
  }

  /** The text {@link #encode} or {@link #ascii} was given (text without the marker unchanged). */
  public static String decode(String stored) {
    if (stored == null || !stored.startsWith(MARKER)) {
      return stored;
    }
    StringBuilder out = new StringBuilder(stored.length());
    for (int i = MARKER.length(); i < stored.length(); i++) {
      char c = stored.charAt(i);
      if (c != '\\' || i + 1 >= stored.length()) {
        out.append(c);
        continue;
      }
      char n = stored.charAt(++i);
      switch (n) {
        case '0' -> out.append('\0');
        case 'u' -> {
          int code = i + 4 < stored.length() ? hex(stored, i + 1) : -1;
          if (code < 0) {
            out.append('\\').append(n); // not one of ours: kept as it is
          } else {
            out.append((char) code);
            i += 4;
          }
        }
        default -> out.append(n); // "\\" and anything else: the character itself
      }
    }
    return out.toString();
  }

  private static String escape(String text, boolean ascii) {
    StringBuilder out = new StringBuilder(text.length() + 8).append(MARKER);
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '\\') {
        out.append("\\\\");
      } else if (c == 0) {
        out.append("\\0");
      } else if (Character.isSurrogate(c)) {
        boolean pair =
            Character.isHighSurrogate(c)
                && i + 1 < text.length()
                && Character.isLowSurrogate(text.charAt(i + 1));
        if (pair && !ascii) {
          out.append(c).append(text.charAt(++i));
        } else {
          unicode(out, c);
        }
      } else if (ascii && (c > 0x7E || (c < 0x20 && c != '\t' && c != '\n' && c != '\r'))) {
        unicode(out, c);
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }

  /** The four hex digits at {@code from} as a number, or -1. */
  private static int hex(String s, int from) {
    int v = 0;
    for (int i = from; i < from + 4; i++) {
      int d = Character.digit(s.charAt(i), 16);
      if (d < 0) {
        return -1;
      }
      v = v * 16 + d;
    }
    return v;
  }

  private static void unicode(StringBuilder out, char c) {
    out.append("\\u").append(String.format("%04X", (int) c));
  }
}
