package dev.postbox.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.LongString;
import dev.postbox.core.PermanentMessageException;
import dev.postbox.core.engine.DeliveryProcessor;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.core.time.Sleeper;
import dev.postbox.rabbitmq.RabbitTopology;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delayed retries the broker's way, for unordered subscriptions: a delivery whose in-place retries
 * of a transient failure ran out is published, with its body and properties as received, to the
 * wait queue of tier 1 of its shard queue (a quorum queue with a message TTL that dead-letters back
 * to the shard queue), and acked only after the broker confirmed that copy. When it comes back it
 * is attempted once more; a failure moves it to the next tier, and after the last (or on a
 * permanent failure) it is given up: the dead-letter store and, if configured, the broker's
 * dead-letter exchange.
 *
 * <p><b>Attempt budget.</b> The tier travels in our own header {@value #TIER}, which we rewrite at
 * every hop and clamp to the configured tiers (a forged value can only make a message reach the
 * dead letters sooner, never loop); the broker's {@code x-death} counts are never read for it. Our
 * headers, {@code x-death} and the {@code x-first-death-*}/{@code x-last-death-*} headers are left
 * out of the dead-letter store's letters, which keep the message as first received (the broker's
 * dead-letter exchange copy keeps the broker's {@code x-death} record).
 *
 * <p>Also remembers the properties of the deliveries in flight (for the copies it publishes).
 * Thread-safe.
 */
public final class WaitQueues implements DeliveryProcessor.RetriesExhausted {

  /** Our header: the retry tier a copy was sent to (1 = the first wait queue). */
  public static final String TIER = "pb_retry_tier";

  /** Our header: when the message failed first (ISO-8601). */
  public static final String FIRST_FAILURE = "pb_retry_first_failure";

  /** Our header: the last error, truncated. */
  public static final String ERROR = "pb_retry_error";

  /** How long a copy's publisher confirm is awaited before it is published again. */
  static final Duration CONFIRM_TIMEOUT = Duration.ofSeconds(10);

  private static final Duration REPUBLISH_WAIT = Duration.ofSeconds(1);
  private static final Logger log = LoggerFactory.getLogger(WaitQueues.class);

  /** A delivery in flight: its properties, routing key and the shard queue it came from. */
  public record Received(AMQP.BasicProperties properties, String routingKey, String queue) {}

  private final String subscription;
  private final List<Duration> tiers;
  private final Optional<String> deadLetterExchange;
  private final Supplier<Connection> connection;
  private final Clock clock;
  private final Sleeper sleeper;
  private final Map<Incoming, Received> inFlight = new ConcurrentHashMap<>();
  private final Object publishLock = new Object();
  private DeliveryProcessor processor;
  private Channel channel; // guarded by publishLock

  /**
   * Retries of {@code subscription} over {@code tiers} (empty: none, only the dead-letter exchange
   * is used), publishing on a channel of {@code connection}.
   */
  public WaitQueues(
      String subscription,
      List<Duration> tiers,
      Optional<String> deadLetterExchange,
      Supplier<Connection> connection,
      Clock clock,
      Sleeper sleeper) {
    this.subscription = subscription;
    this.tiers = List.copyOf(tiers);
    this.deadLetterExchange = deadLetterExchange;
    this.connection = connection;
    this.clock = clock;
    this.sleeper = sleeper;
  }

  /** The processor that applies the returning copies; set once, before the first delivery. */
  public void attach(DeliveryProcessor processor) {
    this.processor = processor;
  }

  /**
   * Whether there are wait queues (else failures go to the dead letters after in-place retries).
   */
  public boolean enabled() {
    return !tiers.isEmpty();
  }

  /** Remembers {@code in}'s delivery until {@link #forget}. */
  public void remember(Incoming in, Received received) {
    inFlight.put(in, received);
  }

  /** Forgets {@code in}'s delivery. */
  public void forget(Incoming in) {
    inFlight.remove(in);
  }

  /** The delivery in flight at {@code topic}/{@code shard}/{@code tag}, if any. */
  public Optional<Received> find(String topic, int shard, long tag) {
    for (var e : inFlight.entrySet()) {
      Incoming in = e.getKey();
      if (in.offset() == tag && in.partition() == shard && in.topic().equals(topic)) {
        return Optional.of(e.getValue());
      }
    }
    return Optional.empty();
  }

  /**
   * The retry tier of a delivery: our header, clamped to the configured tiers; 0 (a first delivery)
   * without it or when unreadable.
   */
  public int tier(AMQP.BasicProperties properties) {
    Object v = properties.getHeaders() == null ? null : properties.getHeaders().get(TIER);
    if (v == null || tiers.isEmpty()) {
      return 0;
    }
    try {
      int t = Integer.parseInt(text(v).trim());
      return Math.max(0, Math.min(t, tiers.size()));
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  @Override
  public boolean handOff(
      Incoming in, Throwable error, int attempts, Instant firstFailure, BooleanSupplier owned) {
    return publish(in, 1, error, firstFailure, owned);
  }

  /**
   * A copy that came back from the wait queue of {@code tier}: attempted once more (attempt {@code
   * tier + 1}); on failure sent to the next tier, or given up after the last. Returns whether it is
   * finished (false: not owned any more, redelivered).
   */
  public boolean retry(
      Incoming in, AMQP.BasicProperties properties, int tier, BooleanSupplier owned) {
    Throwable error = processor.applyDelayed(in, tier + 1);
    if (error == null) {
      return true;
    }
    Instant firstFailure = firstFailure(properties);
    if (error instanceof PermanentMessageException || tier >= tiers.size()) {
      log.warn(
          "{}: {} failed after retry tier {} of {}; dead-lettered: {}",
          subscription,
          DeliveryPosition.of(in),
          tier,
          tiers.size(),
          error.toString());
      processor.giveUpDelayed(in, error, tier + 1, firstFailure);
      return true;
    }
    processor.retried(in);
    return publish(in, tier + 1, error, firstFailure, owned);
  }

  /**
   * Publishes a copy of the delivery {@code letter} was made from to the broker's dead-letter
   * exchange (when configured), with its routing key, body and properties as received plus why it
   * was given up ({@link DeadLetterCopy}); confirmed before it returns.
   *
   * @throws IllegalStateException if it could not be published and confirmed
   */
  public void toDeadLetterExchange(NewDeadLetter letter) {
    if (deadLetterExchange.isEmpty()) {
      return;
    }
    Received r =
        find(letter.topic(), letter.partition(), letter.offset())
            .orElseThrow(
                () -> new IllegalStateException("delivery " + letter.offset() + " not in flight"));
    AMQP.BasicProperties p = DeadLetterCopy.properties(r.properties(), r.queue(), letter);
    if (!send(deadLetterExchange.get(), r.routingKey(), p, letter.value())) {
      throw new IllegalStateException(
          "the copy for dead-letter exchange '" + deadLetterExchange.get() + "' was not confirmed");
    }
  }

  private boolean publish(
      Incoming in, int tier, Throwable error, Instant firstFailure, BooleanSupplier owned) {
    Received r = inFlight.get(in);
    if (r == null) {
      throw new IllegalStateException("delivery not in flight: " + DeliveryPosition.of(in));
    }
    Map<String, Object> headers = cleanHeaders(r.properties());
    headers.put(TIER, Integer.toString(tier));
    headers.put(FIRST_FAILURE, firstFailure.toString());
    headers.put(ERROR, DeadLetterCopy.safe(String.valueOf(error), DeadLetterCopy.MAX_ERROR));
    AMQP.BasicProperties p = r.properties().builder().headers(headers).build();
    String waitQueue = RabbitTopology.waitQueue(r.queue(), tier);
    while (owned.getAsBoolean()) {
      if (send("", waitQueue, p, in.value())) {
        return true;
      }
      try {
        sleeper.sleep(REPUBLISH_WAIT);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }
    return false;
  }

  /** Publishes and awaits the confirm; false (logged) if that failed. */
  private boolean send(String exchange, String routingKey, AMQP.BasicProperties p, byte[] body) {
    synchronized (publishLock) {
      try {
        if (channel == null || !channel.isOpen()) {
          channel = connection.get().createChannel();
          channel.confirmSelect();
        }
        channel.basicPublish(exchange, routingKey, false, p, body);
        channel.waitForConfirmsOrDie(CONFIRM_TIMEOUT.toMillis());
        return true;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      } catch (Exception e) {
        log.warn(
            "{}: cannot publish to '{}' ('{}'): {}",
            subscription,
            exchange,
            routingKey,
            e.toString());
        if (channel != null && channel.isOpen()) {
          try {
            channel.abort();
          } catch (Exception ignored) {
            // replaced on the next attempt
          }
        }
        channel = null;
        return false;
      }
    }
  }

  private Instant firstFailure(AMQP.BasicProperties properties) {
    Instant now = clock.instant();
    Object v = properties.getHeaders() == null ? null : properties.getHeaders().get(FIRST_FAILURE);
    if (v == null) {
      return now;
    }
    try {
      Instant t = Instant.parse(text(v));
      return t.isAfter(now) ? now : t;
    } catch (DateTimeParseException e) {
      return now;
    }
  }

  /** Whether {@code name} is a header the retries or the broker's dead-lettering added. */
  public static boolean added(String name) {
    String lower = name.toLowerCase(Locale.ROOT);
    return lower.startsWith("pb_retry_")
        || lower.equals("x-death")
        || lower.startsWith("x-first-death-")
        || lower.startsWith("x-last-death-");
  }

  private static Map<String, Object> cleanHeaders(AMQP.BasicProperties p) {
    Map<String, Object> out = new LinkedHashMap<>();
    if (p.getHeaders() != null) {
      p.getHeaders()
          .forEach((k, v) -> {
            if (!added(k)) {
              out.put(k, v);
            }
          });
    }
    return out;
  }

  private static String text(Object v) {
    if (v instanceof LongString ls) {
      return new String(ls.getBytes(), StandardCharsets.UTF_8);
    }
    if (v instanceof byte[] b) {
      return new String(b, StandardCharsets.UTF_8);
    }
    return String.valueOf(v);
  }

  /** A delivery's position for log lines. */
  private static final class DeliveryPosition {
    static String of(Incoming in) {
      return in.topic() + "-" + in.partition() + "#" + in.offset();
    }
  }
}
