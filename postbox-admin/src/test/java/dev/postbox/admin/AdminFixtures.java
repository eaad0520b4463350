package dev.postbox.admin;

import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.DeadLetter;
import dev.postbox.core.spi.DeadLetterStore.Header;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;

/** Dead letters as a consumer would write them, and a decoder for them (no transport needed). */
final class AdminFixtures {

  private AdminFixtures() {}

  /** Rebuilds the message from the stored letter (what a transport's decoder does). */
  static final Function<DeadLetter, Message> DECODER =
      d -> {
        NewDeadLetter l = d.letter();
        Message.Builder b =
            Message.builder(l.topic(), l.type().orElseThrow())
                .id(l.messageId().orElseThrow())
                .key(l.key() == null ? null : new String(l.key(), StandardCharsets.UTF_8))
                .payload(new Payload(l.value(), Payload.JSON));
        l.headers().stream()
            .filter(h -> h.name().equals("ce_tenant"))
            .findFirst()
            .ifPresent(h -> b.tenant(new String(h.value(), StandardCharsets.UTF_8)));
        return b.build();
      };

  static NewDeadLetter letter(
      String consumer,
      String topic,
      String key,
      String errorClass,
      String tenant,
      Instant at,
      String payload) {
    List<Header> headers = new ArrayList<>();
    headers.add(new Header("ce_type", "order.placed".getBytes(StandardCharsets.UTF_8)));
    if (tenant != null) {
      headers.add(new Header("ce_tenant", tenant.getBytes(StandardCharsets.UTF_8)));
    }
    headers.add(new Header("content-type", "application/json".getBytes(StandardCharsets.UTF_8)));
    return new NewDeadLetter(
        consumer,
        topic,
        0,
        at.toEpochMilli(),
        Optional.of(UUID.randomUUID()),
        Optional.of("order.placed"),
        key.getBytes(StandardCharsets.UTF_8),
        payload.getBytes(StandardCharsets.UTF_8),
        headers,
        Classification.PERMANENT,
        errorClass,
        "bad order " + key,
        errorClass + ": bad order\n\tat dev.example.Handler.handle(Handler.java:42)",
        errorClass + "|bad order|" + topic,
        3,
        at,
        at.plusSeconds(2));
  }
}
