package dev.postbox.core.consumer;

import dev.postbox.core.Message;
import dev.postbox.core.codec.Decoded;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Optional;

/** A settable clock and a minimal delivery for failure-handling tests. */
final class TestSupport {

  private TestSupport() {}

  /** A clock that moves only when told to. Thread-safe. */
  static final class FakeClock extends Clock {
    private volatile Instant now;

    FakeClock(Instant start) {
      this.now = start;
    }

    FakeClock() {
      this(Instant.parse("2026-01-01T00:00:00Z"));
    }

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public Instant instant() {
      return now;
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }
  }

  static Message message() {
    return Message.builder("orders", "order.created").jsonPayload("{}").build();
  }

  static Delivery delivery(Message message, int attempt) {
    return new Delivery() {
      @Override
      public Message message() {
        return message;
      }

      @Override
      public String topic() {
        return message.topic();
      }

      @Override
      public int partition() {
        return 0;
      }

      @Override
      public long offset() {
        return 42;
      }

      @Override
      public int attempt() {
        return attempt;
      }

      @Override
      public Optional<Connection> connection() {
        return Optional.empty();
      }

      @Override
      public Decoded<Object> decoded() {
        throw new IllegalStateException("no event types");
      }

      @Override
      public boolean advanceVersion(String entity, long version) {
        throw new IllegalStateException("not effectively-once");
      }
    };
  }
}
