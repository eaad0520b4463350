package dev.postbox.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class MessageSourceTest {

  @Test
  void acceptsUriReferences() {
    for (String source :
        new String[] {
          "/postbox", "/orders/eu-1", "urn:acme:orders", "https://acme.example/orders"
        }) {
      assertThat(Message.builder("t", "x").source(source).build().source()).isEqualTo(source);
    }
  }

  @Test
  void rejectsSourcesThatAreNotUriReferences() {
    assertThatThrownBy(() -> Message.builder("t", "x").source("order service").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not a URI reference");
    assertThatThrownBy(() -> Message.builder("t", "x").source("/a|b").build())
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aSourceAcceptedBeforeLetsNoOtherSourcePassUnchecked() {
    for (int i = 0; i < 3; i++) {
      assertThat(Message.builder("t", "x").source("/orders").build().source()).isEqualTo("/orders");
      assertThatThrownBy(() -> Message.builder("t", "x").source("/orders service").build())
          .as("right after a valid source, round %d", i)
          .hasMessageContaining("not a URI reference");
      assertThatThrownBy(() -> Message.builder("t", "x").source("/orders|").build())
          .as("a valid source with one more character")
          .hasMessageContaining("not a URI reference");
    }
  }
}
