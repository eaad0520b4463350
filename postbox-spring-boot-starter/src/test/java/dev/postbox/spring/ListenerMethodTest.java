package dev.postbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.core.Message;
import dev.postbox.core.codec.Decoded;
import dev.postbox.core.consumer.Delivery;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A {@link PostboxListener} method's parameters are supplied from the delivery, or refused. */
class ListenerMethodTest {

  static class Handlers {
    final List<Object> seen = new ArrayList<>();

    void all(Delivery d, Message m, String text, byte[] bytes) {
      seen.addAll(List.of(d, m, text, bytes.length));
    }

    void needsConnection(Connection c) {
      seen.add(c);
    }

    void fails() throws java.io.IOException {
      throw new java.io.IOException("down");
    }

    void unsupported(Integer n) {}

    void typed(OrderPlaced order, Delivery d) {
      seen.add(order);
    }
  }

  record OrderPlaced(String orderId, int quantity) {}

  private static Delivery delivery(Message m) {
    return new Delivery() {
      public Message message() {
        return m;
      }

      public String topic() {
        return m.topic();
      }

      public int partition() {
        return 0;
      }

      public long offset() {
        return 7;
      }

      public int attempt() {
        return 1;
      }

      public Optional<Connection> connection() {
        return Optional.empty();
      }

      public Decoded<Object> decoded() {
        throw new IllegalStateException("no event types");
      }

      public boolean advanceVersion(String entity, long version) {
        return true;
      }
    };
  }

  private static ListenerMethod of(Handlers h, String name, Class<?>... types) throws Exception {
    return new ListenerMethod(h, Handlers.class.getDeclaredMethod(name, types));
  }

  @Test
  void suppliesTheDeliveryTheMessageAndThePayload() throws Exception {
    Handlers h = new Handlers();
    Message m = Message.builder("t", "e").key("k").jsonPayload("{\"a\":1}").build();
    Delivery d = delivery(m);
    of(h, "all", Delivery.class, Message.class, String.class, byte[].class).handle(d);
    assertThat(h.seen).containsExactly(d, m, "{\"a\":1}", 7);
  }

  @Test
  void aConnectionOutsideEffectivelyOnceIsRefusedAndExceptionsPassUnwrapped() throws Exception {
    Handlers h = new Handlers();
    Delivery d = delivery(Message.builder("t", "e").build());
    assertThatThrownBy(() -> of(h, "needsConnection", Connection.class).handle(d))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("only an effectively-once topic has");
    assertThatThrownBy(() -> of(h, "fails").handle(d))
        .isInstanceOf(java.io.IOException.class)
        .hasMessage("down");
  }

  @Test
  void anApplicationTypeIsDecodedFromTheJsonPayloadAndBadJsonIsAPermanentFailure()
      throws Exception {
    Handlers h = new Handlers();
    Message m =
        Message.builder("t", "order.placed")
            .jsonPayload("{\"orderId\":\"o-1\",\"quantity\":3}")
            .build();
    of(h, "typed", OrderPlaced.class, Delivery.class).handle(delivery(m));
    assertThat(h.seen).containsExactly(new OrderPlaced("o-1", 3));
    Message bad = Message.builder("t", "order.placed").jsonPayload("{not json").build();
    assertThatThrownBy(
            () -> of(h, "typed", OrderPlaced.class, Delivery.class).handle(delivery(bad)))
        .isInstanceOf(dev.postbox.core.PermanentMessageException.class);
  }

  @Test
  void anUnsupportedParameterIsRefusedAtStartUp() {
    assertThatThrownBy(() -> of(new Handlers(), "unsupported", Integer.class))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cannot supply a parameter of type java.lang.Integer");
  }
}
