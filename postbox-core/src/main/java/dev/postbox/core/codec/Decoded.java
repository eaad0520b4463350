package dev.postbox.core.codec;

import java.util.Objects;

/**
 * The outcome of {@link EventTypes#decode(dev.postbox.core.Message)} that is not an error: either
 * the {@link Event} (a registered type, upcast to its current version and bound to its class) or
 * {@link UnknownType} (a type this service did not register, which a consumer usually skips and
 * counts). Failures are not outcomes: they throw {@link dev.postbox.core.DecodingException}.
 *
 * <p>Handle it with a pattern-matching {@code switch}:
 *
 * <pre>{@code
 * switch (eventTypes.decode(message)) {
 *   case Decoded.Event(var type, var version, OrderPlaced placed) -> ship(placed);
 *   case Decoded.Event<Object> other -> handleOther(other.value());
 *   case Decoded.UnknownType<Object> unknown -> ignoredCounter.increment();
 * }
 * }</pre>
 *
 * <p>Immutable records; thread-safe if the decoded value is.
 *
 * @param <T> type of the decoded value
 */
public sealed interface Decoded<T> permits Decoded.Event, Decoded.UnknownType {

  /** The event type of the message. */
  String type();

  /**
   * The schema version: for an {@link Event} the version of its value (the registered current
   * version, after upcasting); for an {@link UnknownType} the version the message declared.
   */
  int schemaVersion();

  /**
   * A registered event type, decoded.
   *
   * @param type the event type
   * @param schemaVersion the registered current version (the message may have declared an older one
   *     that was upcast)
   * @param value the decoded event, never {@code null}
   * @param <T> type of the value
   */
  record Event<T>(String type, int schemaVersion, T value) implements Decoded<T> {
    public Event {
      Objects.requireNonNull(type, "type");
      Objects.requireNonNull(value, "value");
    }
  }

  /**
   * An event type that is not registered: nothing was decoded. Not an error; a consumer that
   * subscribes to a topic carrying several types ignores the ones it does not know.
   *
   * @param type the unknown event type
   * @param schemaVersion the version the message declared
   * @param <T> type the value would have had
   */
  record UnknownType<T>(String type, int schemaVersion) implements Decoded<T> {
    public UnknownType {
      Objects.requireNonNull(type, "type");
    }
  }
}
