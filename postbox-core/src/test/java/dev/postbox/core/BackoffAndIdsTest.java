package dev.postbox.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class BackoffAndIdsTest {

  @Test
  void backoffGrowsExponentiallyWithinJitterBoundsAndCaps() {
    Backoff b = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(2), 2, 0.5);
    Random r = new Random(1);
    for (int attempt = 1; attempt <= 10; attempt++) {
      long cap = Math.min(2000, 100L << (attempt - 1));
      for (int i = 0; i < 50; i++) {
        long ms = b.delay(attempt, r).toMillis();
        assertThat(ms).isBetween(cap / 2, cap);
      }
    }
    assertThat(new Backoff(Duration.ofMillis(100), Duration.ofSeconds(1), 2, 0).delay(3, r))
        .isEqualTo(Duration.ofMillis(400));
  }

  @Test
  void backoffRejectsNonsense() {
    assertThatThrownBy(() -> new Backoff(Duration.ZERO, Duration.ofSeconds(1), 2, 0.5))
        .hasMessageContaining("initial");
    assertThatThrownBy(() -> new Backoff(Duration.ofSeconds(2), Duration.ofSeconds(1), 2, 0.5))
        .hasMessageContaining("max");
    assertThatThrownBy(() -> new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(1), 0.5, 0.5))
        .hasMessageContaining("multiplier");
    assertThatThrownBy(() -> new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(1), 2, 1.5))
        .hasMessageContaining("jitter");
  }

  @Test
  void idsAreVersion7AndStrictlyIncreasingEvenWithinOneMillisecond() {
    Clock frozen = Clock.fixed(Instant.parse("2026-11-29T12:00:00Z"), ZoneOffset.UTC);
    MessageId gen = MessageId.generator(frozen);
    List<UUID> ids = new ArrayList<>();
    for (int i = 0;
        i < 10_000;
        i++) { // more than the 12-bit counter holds: borrows later milliseconds
      ids.add(gen.generate());
    }
    for (int i = 1; i < ids.size(); i++) {
      UUID a = ids.get(i - 1);
      UUID b = ids.get(i);
      assertThat(b.version()).isEqualTo(7);
      assertThat(b.variant()).isEqualTo(2);
      assertThat(Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits()))
          .isNegative();
    }
    assertThat(MessageId.timestampMillis(ids.get(0))).isEqualTo(frozen.millis());
  }

  @Test
  void messageBuilderValidatesAtBuild() {
    assertThatThrownBy(() -> Message.builder("bad topic", "t").build())
        .hasMessageContaining("legal topic");
    assertThatThrownBy(() -> Message.builder("t", " ").build()).hasMessageContaining("type");
    assertThatThrownBy(() -> Message.builder("t", "x").schemaVersion(0).build())
        .hasMessageContaining("schemaVersion");
    assertThatThrownBy(() -> Message.builder("t", "x").header("ce_id", "1"))
        .hasMessageContaining("reserved");
    assertThatThrownBy(() -> Message.builder("t", "x").key("")).hasMessageContaining("key");
    Message m = Message.builder("t", "x").key("k").build();
    assertThat(m.toBuilder().build()).isEqualTo(m);
    Message reply = Message.builder("t", "y").causedBy(m).build();
    assertThat(reply.causationId()).contains(m.id().toString());
    assertThat(reply.correlationId()).contains(m.id().toString());
  }
}
