package dev.postbox.core.engine;

import dev.postbox.core.DeadLetters;
import dev.postbox.core.Message;
import dev.postbox.core.consumer.FailureHandler;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Clock;
import java.time.Instant;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives records up: keeps each, byte-identical, in the dead-letter store (retried until it is safe)
 * and tells the failure handler. Thread-safe.
 */
final class DeadLetterWriter {

  // the processor's logger name, which operators configure
  private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

  private final String group;
  private final Optional<DeadLetterStore> deadLetters;
  private final FailureHandler failures;
  private final StoreRetry storeRetry;
  private final DeliveryTelemetry telemetry;
  private final Clock clock;

  DeadLetterWriter(
      String group,
      Optional<DeadLetterStore> deadLetters,
      FailureHandler failures,
      StoreRetry storeRetry,
      DeliveryTelemetry telemetry,
      Clock clock) {
    this.group = group;
    this.deadLetters = deadLetters;
    this.failures = failures;
    this.storeRetry = storeRetry;
    this.telemetry = telemetry;
    this.clock = clock;
  }

  /**
   * Gives {@code d} up: counted, dead-lettered (attempts: its attempt number) and handed to the
   * failure handler's {@code onGiveUp}.
   */
  void giveUp(
      EngineDelivery d,
      Throwable error,
      String reason,
      Classification classification,
      Instant firstFailure) {
    telemetry.givenUp.incrementAndGet();
    store(
        d.incoming(),
        d.message(),
        error,
        classification,
        d.attempt(),
        firstFailure,
        clock.instant());
    try {
      failures.onGiveUp(d, error, reason);
    } catch (RuntimeException e) {
      log.error("{}: onGiveUp threw; the message is skipped", group, e);
    }
  }

  /**
   * Keeps the record, byte-identical, in the dead-letter store ({@code message} null when it could
   * not be decoded). Retried until it succeeds: a record is finished (its offset may be committed)
   * only once its dead letter is safe. A crash before that redelivers it.
   */
  void store(
      Incoming in,
      Message message,
      Throwable error,
      Classification classification,
      int attempts,
      Instant firstFailure,
      Instant lastFailure) {
    if (deadLetters.isEmpty()) {
      return;
    }
    StringWriter trace = new StringWriter();
    error.printStackTrace(new PrintWriter(trace));
    NewDeadLetter letter =
        new NewDeadLetter(
            group,
            in.topic(),
            in.partition(),
            in.offset(),
            message == null ? Optional.empty() : Optional.of(message.id()),
            message == null ? Optional.empty() : Optional.of(message.type()),
            in.key(),
            in.value(),
            in.headers(),
            classification,
            error.getClass().getName(),
            String.valueOf(error.getMessage()),
            trace.toString(),
            DeadLetters.fingerprint(in.topic(), error),
            attempts,
            firstFailure,
            lastFailure);
    boolean stored =
        storeRetry
            .untilDone(
                "storing the dead letter for " + DeliveryProcessor.position(in),
                () -> true, // a record is finished only once its dead letter is safe
                () -> {
                  deadLetters.get().add(letter);
                  return true;
                })
            .isPresent();
    if (!stored) {
      throw new IllegalStateException(
          "interrupted before the dead letter for "
              + DeliveryProcessor.position(in)
              + " was stored");
    }
    telemetry.deadLettered.incrementAndGet();
    telemetry.meters(in).deadLettered.increment();
  }
}
