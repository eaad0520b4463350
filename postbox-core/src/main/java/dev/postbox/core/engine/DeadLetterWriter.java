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
  private final RefusedWrites refused;
  private final DeliveryTelemetry telemetry;
  private final Clock clock;

  DeadLetterWriter(
      String group,
      Optional<DeadLetterStore> deadLetters,
      FailureHandler failures,
      StoreRetry storeRetry,
      RefusedWrites refused,
      DeliveryTelemetry telemetry,
      Clock clock) {
    this.group = group;
    this.deadLetters = deadLetters;
    this.failures = failures;
    this.storeRetry = storeRetry;
    this.refused = refused;
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
   * only once its dead letter is safe. A crash before that redelivers it. If the store refuses the
   * letter for good (a permanent SQLSTATE), it keeps what the store accepts ({@link
   * ReducedLetters}), loudly ({@link RefusedWrites}), and the record is finished: retrying the same
   * row would stop its key and its partition's offsets forever.
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
    if (!keep(in, letter)) {
      return;
    }
    telemetry.deadLettered.incrementAndGet();
    telemetry.meters(in).deadLettered.increment();
  }

  /** Stores {@code letter}, or what the store accepts of it; false if nothing could be kept. */
  private boolean keep(Incoming in, NewDeadLetter letter) {
    String what = "storing the dead letter for " + DeliveryProcessor.position(in);
    StoreRefused refusal;
    try {
      storeOrThrow(what, letter);
      return true;
    } catch (StoreRefused e) {
      refusal = e;
    }
    for (NewDeadLetter reduced : ReducedLetters.after(letter, refusal.sqlState())) {
      refused.refused(in, "dead-letter store", refusal, "storing what it accepts instead");
      try {
        storeOrThrow(what + " (reduced)", reduced);
        return true;
      } catch (StoreRefused e) {
        refusal = e;
      }
    }
    refused.refused(in, "dead-letter store", refusal, "nothing of the record could be kept");
    log.error(
        "{}: {} is skipped without a dead letter: the store refused every form of it",
        group,
        DeliveryProcessor.position(in));
    return false;
  }

  private void storeOrThrow(String what, NewDeadLetter letter) {
    boolean stored =
        storeRetry
            .untilDone(
                what,
                () -> true, // a record is finished only once its dead letter is safe
                () -> {
                  deadLetters.get().add(letter);
                  return true;
                })
            .isPresent();
    if (!stored) {
      throw new IllegalStateException("interrupted before " + what + " was done");
    }
  }
}
