package dev.postbox.cli;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import dev.postbox.core.consumer.QueueLag;
import java.io.PrintStream;

/**
 * The {@code --json} output of the read commands: the operations API's records as JSON with
 * snake_case keys (public: add, never rename), times as ISO-8601 text, durations as seconds, empty
 * optionals as null, bytes as base64.
 */
final class Json {

  private static final ObjectMapper MAPPER =
      new ObjectMapper()
          .registerModule(new Jdk8Module())
          .registerModule(new JavaTimeModule())
          .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
          .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
          // durations as decimal seconds (WRITE_DURATIONS_AS_TIMESTAMPS, nanosecond precision)
          .enable(SerializationFeature.WRITE_DURATIONS_AS_TIMESTAMPS)
          .enable(SerializationFeature.INDENT_OUTPUT)
          .addMixIn(QueueLag.class, QueueLagKeys.class);

  private Json() {}

  /** {@link QueueLag#idle()} is derived, not a component: still the published key {@code idle}. */
  private abstract static class QueueLagKeys {
    @JsonProperty("idle")
    abstract boolean idle();
  }

  static void print(Object value, PrintStream out) {
    try {
      out.println(MAPPER.writeValueAsString(value));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalStateException("writing JSON failed", e);
    }
  }
}
