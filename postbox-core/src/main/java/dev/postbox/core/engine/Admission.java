package dev.postbox.core.engine;

import dev.postbox.core.DecodingException;
import dev.postbox.core.Message;
import dev.postbox.core.ReplayHeaders;
import dev.postbox.core.consumer.FailureDecision;
import dev.postbox.core.consumer.FailureHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.consumer.TenantRejectedException;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import java.time.Clock;
import java.time.Instant;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lets a record in or finishes it at the door: decodes it (undecodable: dead-lettered), passes over
 * a replayed copy addressed to another consumer ({@link ReplayHeaders#addressedElsewhere}; counted,
 * logged), ignores unknown types (counted, logged once per type) and rejects tenants the
 * subscription does not allow (given up). Thread-safe.
 */
final class Admission {

  // the processor's logger name, which operators configure
  private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

  private final Subscription subscription;
  private final FailureHandler failures;
  private final EngineDelivery.Factory deliveries;
  private final DeadLetterWriter deadLetters;
  private final DeliveryTelemetry telemetry;
  private final Clock clock;
  private final Set<String> loggedUnknownTypes = ConcurrentHashMap.newKeySet();

  Admission(
      Subscription subscription,
      FailureHandler failures,
      EngineDelivery.Factory deliveries,
      DeadLetterWriter deadLetters,
      DeliveryTelemetry telemetry,
      Clock clock) {
    this.subscription = subscription;
    this.failures = failures;
    this.deliveries = deliveries;
    this.deadLetters = deadLetters;
    this.telemetry = telemetry;
    this.clock = clock;
  }

  /** Decodes and validates; returns null when the record is finished here (ignored or rejected). */
  Message admit(Incoming in) {
    Message message;
    try {
      message = decode(in);
    } catch (DecodingException e) {
      telemetry.rejected.incrementAndGet();
      telemetry.givenUp.incrementAndGet();
      Instant now = clock.instant();
      deadLetters.store(in, null, e, Classification.PERMANENT, 1, now, now);
      try {
        failures.onUndecodable(in.topic(), in.partition(), in.offset(), e);
      } catch (RuntimeException ex) {
        log.error("{}: onUndecodable threw; the record is skipped", subscription.name(), ex);
      }
      return null;
    }
    if (ReplayHeaders.addressedElsewhere(message, subscription.name())) {
      telemetry.meters(in).replaysSkipped.increment();
      // the target is a header value: not logged (header values never reach logs)
      log.info(
          "{}: passing over message {} at {}: a replay of dead letter {} for another consumer",
          subscription.name(),
          message.id(),
          DeliveryProcessor.position(in),
          message.header(ReplayHeaders.DEAD_LETTER).map(Admission::digits).orElse("?"));
      return null;
    }
    if (subscription.eventTypes().isPresent()
        && subscription.eventTypes().get().find(message.type()).isEmpty()) {
      telemetry.unknownTypes.incrementAndGet();
      telemetry.meters(in).unknownTypes.increment();
      if (loggedUnknownTypes.add(message.type())) {
        log.info(
            "{}: ignoring messages of unknown type '{}' (logged once per type; counted)",
            subscription.name(),
            message.type());
      }
      return null;
    }
    String reason = tenantRejection(message);
    if (reason != null) {
      telemetry.rejected.incrementAndGet();
      TenantRejectedException error = new TenantRejectedException(reason);
      EngineDelivery d = deliveries.of(in, message, 1, Optional.empty());
      FailureDecision decision = failures.decide(d, error);
      deadLetters.giveUp(
          d,
          error,
          decision instanceof FailureDecision.GiveUp g ? g.reason() : reason,
          Classification.PERMANENT,
          clock.instant());
      return null;
    }
    return message;
  }

  /**
   * The record's message. A transport mapping must throw only {@link DecodingException}; anything
   * else it throws is a bug in it, but the bytes will not map any better on a retry, so it is
   * classified here as a permanent decoding failure (dead-lettered) instead of escaping the engine,
   * where it would leave the record unfinished and its partition's commits stalled. Its message is
   * not copied: it may quote the bytes.
   */
  private static Message decode(Incoming in) {
    try {
      return in.decode().get();
    } catch (DecodingException e) {
      throw e;
    } catch (RuntimeException e) {
      throw DecodingException.builder(
              "the transport mapping failed unexpectedly: " + e.getClass().getName(),
              in.value() == null ? new byte[0] : in.value())
          .cause(e)
          .build();
    }
  }

  /** {@code text} if it is a plain number (a dead letter id), else "?" (never a forged text). */
  private static String digits(String text) {
    return !text.isEmpty()
            && text.length() <= 19
            && text.chars().allMatch(c -> c >= '0' && c <= '9')
        ? text
        : "?";
  }

  /** Why the message's tenant is not allowed, or null when it is (or every tenant is). */
  private String tenantRejection(Message message) {
    if (subscription.allowedTenants().isEmpty()) {
      return null;
    }
    if (message.tenant().isEmpty()) {
      return "message " + message.id() + " has no tenant";
    }
    if (!subscription.allowedTenants().contains(message.tenant().get())) {
      // the tenant is a header value: named by its length only, as header values never reach logs
      return "message "
          + message.id()
          + " has a tenant that is not allowed ("
          + dev.postbox.core.codec.HeaderText.quote(message.tenant().get())
          + ")";
    }
    return null;
  }
}
