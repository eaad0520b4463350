package dev.postbox.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class DecodingExceptionTest {

  @Test
  void isPermanentAndUnchecked() {
    DecodingException e = DecodingException.builder("bad", new byte[0]).build();
    assertThat(e)
        .isInstanceOf(PermanentMessageException.class)
        .isInstanceOf(PostboxException.class)
        .isInstanceOf(RuntimeException.class);
  }

  @Test
  void copiesRawBytesInAndOut() {
    byte[] raw = {1, 2, 3};
    DecodingException e = DecodingException.builder("bad", raw).build();
    raw[0] = 9;
    assertThat(e.rawBytes()).containsExactly(1, 2, 3);
    e.rawBytes()[1] = 9;
    assertThat(e.rawBytes()).containsExactly(1, 2, 3);
  }

  @Test
  void contextIsOptionalAndInTheMessageButTheBytesAreNot() {
    DecodingException bare = DecodingException.builder("bad", new byte[] {42}).build();
    assertThat(bare.messageId()).isEmpty();
    assertThat(bare.type()).isEmpty();
    assertThat(bare.schemaVersion()).isEmpty();
    assertThat(bare.getCause()).isNull();

    UUID id = MessageId.next();
    Throwable cause = new IllegalStateException("root");
    DecodingException full =
        DecodingException.builder(
                "secret payload broken", "s3cr3t".getBytes(StandardCharsets.UTF_8))
            .messageId(id)
            .type("order.placed")
            .schemaVersion(3)
            .cause(cause)
            .build();
    assertThat(full.messageId()).contains(id);
    assertThat(full.type()).contains("order.placed");
    assertThat(full.schemaVersion()).hasValue(3);
    assertThat(full.getCause()).isSameAs(cause);
    assertThat(full.reason()).isEqualTo("secret payload broken");
    assertThat(full.getMessage())
        .contains(
            "secret payload broken", id.toString(), "order.placed", "schemaVersion=3", "6 raw")
        .doesNotContain("s3cr3t");
  }

  @Test
  void forMessageTakesContextAndPayloadFromTheMessage() {
    Message m =
        Message.builder("orders", "order.placed").schemaVersion(2).jsonPayload("{oops").build();
    DecodingException e = DecodingException.forMessage(m, "bad json", null);
    assertThat(e.messageId()).contains(m.id());
    assertThat(e.type()).contains("order.placed");
    assertThat(e.schemaVersion()).hasValue(2);
    assertThat(e.rawBytes()).isEqualTo("{oops".getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void rejectsNonsenseVersion() {
    assertThatThrownBy(() -> DecodingException.builder("bad", new byte[0]).schemaVersion(0))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
