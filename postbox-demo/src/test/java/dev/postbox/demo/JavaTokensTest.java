package dev.postbox.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The tokenizer and the block finder DocSnippetsTest compares the pages with. */
class JavaTokensTest {

  private static List<String> texts(String source) {
    return JavaTokens.of(source).stream().map(JavaTokens.Token::text).toList();
  }

  @Test
  void layoutAndCommentsDoNotCount() {
    String page = "outbox.write(m);   // the message\n/* a note */ x >>>= 2;";
    String formatted = "outbox\n    .write(\n        m); x\n >>>=\n 2; // other words";
    assertThat(texts(page)).isEqualTo(texts(formatted));
    assertThat(texts(page))
        .containsExactly("outbox", ".", "write", "(", "m", ")", ";", "x", ">>>=", "2", ";");
  }

  @Test
  void literalsAreOneTokenEachAndKeepTheirText() {
    assertThat(texts("f(\"a // not a comment\", 'x', '\\'', 1_000L, 0x1Fp-2, 2.5e+3, .5f)"))
        .containsExactly(
            "f",
            "(",
            "\"a // not a comment\"",
            ",",
            "'x'",
            ",",
            "'\\''",
            ",",
            "1_000L",
            ",",
            "0x1Fp-2",
            ",",
            "2.5e+3",
            ",",
            ".5f",
            ")");
    assertThat(texts("a(\"x\")")).isNotEqualTo(texts("a(\"y\")"));
  }

  @Test
  void textBlocksCompareByContentNotIndentation() {
    String page = "sql(\"\"\"\n  SELECT 1\n    FROM t\n  \"\"\");";
    String formatted = "sql(\n        \"\"\"\n        SELECT 1\n          FROM t\n        \"\"\");";
    assertThat(texts(page)).isEqualTo(texts(formatted));
    assertThat(texts(page)).isNotEqualTo(texts("sql(\"\"\"\n  SELECT 2\n  \"\"\");"));
  }

  @Test
  void operatorsTakeTheLongestMatch() {
    assertThat(texts("a -> b :: c ... d != e"))
        .containsExactly("a", "->", "b", "::", "c", "...", "d", "!=", "e");
  }

  @Test
  void tokensKnowTheirLine() {
    List<JavaTokens.Token> tokens = JavaTokens.of("a\n/* two\nlines */ b\n\"s\"");
    assertThat(tokens).extracting(JavaTokens.Token::line).containsExactly(1, 3, 4);
  }

  @Test
  void blocksCarryTheMarkerOfTheLineBeforeAndOtherFencesAreSkipped() {
    String page =
        String.join(
            "\n",
            "text",
            "<!-- snippet: ReadmeSnippets#outbox -->",
            "```java",
            "a();",
            "```",
            "````markdown",
            "```java",
            "not a block",
            "```",
            "````",
            "",
            "  ```java",
            "  b();",
            "  ```");
    List<JavaBlocks.Block> blocks = JavaBlocks.of(page);
    assertThat(blocks).hasSize(2);
    assertThat(blocks.get(0).fenceLine()).isEqualTo(3);
    assertThat(blocks.get(0).marker()).contains("ReadmeSnippets#outbox");
    assertThat(blocks.get(0).text()).isEqualTo("a();");
    assertThat(blocks.get(1).fenceLine()).isEqualTo(12);
    assertThat(blocks.get(1).marker()).isEmpty();
  }
}
