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
}
