package dev.postbox.core.engine;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.DecodingException;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.MessageConflictException;
import dev.postbox.core.codec.Decoded;
import dev.postbox.core.consumer.BatchHandler;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.DuplicateListener;
import dev.postbox.core.consumer.FailureDecision;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.consumer.TenantRejectedException;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.core.spi.IdempotencyStore;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.core.time.Sleeper;
import dev.postbox.core.tracing.TraceHeaders;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What happens to one record (or one batch) after it was read, whatever the transport: decode,
 * validate at the boundary, ignore unknown types, apply with the subscription's guarantee (through
 * the inbox for {@code EFFECTIVELY_ONCE}), and hand failures to the failure handler. Driver-free;
 * the Kafka runtime calls it from its worker threads.
 *
 * <p>Thread-safe.
 */
public final class DeliveryProcessor {

  private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

  /**
   * A record as read: its position and a way to decode it (which may throw {@link
   * DecodingException}).
   */
  public record Incoming(
      String topic,
      int partition,
      long offset,
      Supplier<Message> decode,
      byte[] key,
      byte[] value,
      List<DeadLetterStore.Header> headers) {}

  private final Subscription subscription;
  private final MessageHandler handler;
  private final BatchHandler batchHandler;
  private final Optional<InboxStore> inbox;
  private final Optional<Idempotency> idempotency;
  private final IdempotentApply idempotent;
  private final Optional<DeadLetterStore> deadLetters;
  private final Optional<Parking> parking;
  private final Optional<RetriesExhausted> retriesExhausted;
  private final Clock clock;
  private final ConsumerMeters meters;
  private final OpenTelemetry openTelemetry;
  private volatile Tracer tracer;
  private final Set<String> loggedUnknownTypes = ConcurrentHashMap.newKeySet();
  private final StoreRetry storeRetry = new StoreRetry(Sleeper.SYSTEM);

  final AtomicLong received = new AtomicLong();
  final AtomicLong applied = new AtomicLong();
  final AtomicLong duplicates = new AtomicLong();
  final AtomicLong unknownTypes = new AtomicLong();
  final AtomicLong stale = new AtomicLong();
  final AtomicLong retries = new AtomicLong();
  final AtomicLong givenUp = new AtomicLong();
  final AtomicLong rejected = new AtomicLong();
  final AtomicLong abandoned = new AtomicLong();
  final AtomicLong deadLettered = new AtomicLong();
  final AtomicLong parked = new AtomicLong();
  final AtomicLong unparked = new AtomicLong();
  final AtomicLong leasesExpired = new AtomicLong();
  final AtomicLong leasesLost = new AtomicLong();

  /**
   * {@code DEDUPLICATED} settings: the store, who hears of suppressed duplicates, and how waiting
   * for another holder's lease sleeps.
   */
  public record Idempotency(
      IdempotencyStore store, DuplicateListener onDuplicate, Sleeper sleeper) {}

  /**
   * A processor for {@code subscription}: {@code metrics} receives the consumer metrics, {@code
   * openTelemetry} (null: {@link GlobalOpenTelemetry}, looked up at the first attempt) makes one
   * span per processing attempt.
   */
  public DeliveryProcessor(
      Subscription subscription,
      MessageHandler handler,
      BatchHandler batchHandler,
      Optional<InboxStore> inbox,
      Optional<DeadLetterStore> deadLetters,
      Optional<Parking> parking,
      Optional<RetriesExhausted> retriesExhausted,
      Clock clock,
      PostboxMetrics metrics,
      OpenTelemetry openTelemetry) {
    this(
        subscription,
        handler,
        batchHandler,
        inbox,
        Optional.empty(),
        deadLetters,
        parking,
        retriesExhausted,
        clock,
        metrics,
        openTelemetry);
  }

  /** A processor as above, with an idempotency store for a {@code DEDUPLICATED} subscription. */
  public DeliveryProcessor(
      Subscription subscription,
      MessageHandler handler,
      BatchHandler batchHandler,
      Optional<InboxStore> inbox,
      Optional<Idempotency> idempotency,
      Optional<DeadLetterStore> deadLetters,
      Optional<Parking> parking,
      Optional<RetriesExhausted> retriesExhausted,
      Clock clock,
      PostboxMetrics metrics,
      OpenTelemetry openTelemetry) {
    this.openTelemetry = openTelemetry;
    this.idempotency = idempotency;
    this.idempotent =
        idempotency
            .map(i ->
                new IdempotentApply(
                    i.store(),
                    i.sleeper(),
                    subscription.idempotencyLease(),
                    subscription.idempotencyTtl()))
            .orElse(null);
    if (subscription.guarantee() == DeliveryGuarantee.DEDUPLICATED && idempotency.isEmpty()) {
      throw new IllegalArgumentException(
          "subscription '"
              + subscription.name()
              + "' is DEDUPLICATED and needs an IdempotencyStore");
    }
    this.subscription = subscription;
    this.meters = new ConsumerMeters(metrics, subscription.name());
    this.deadLetters = deadLetters;
    this.parking = parking;
    this.retriesExhausted = retriesExhausted;
    if (parking.isPresent() && retriesExhausted.isPresent()) {
      throw new IllegalArgumentException(
          "ordered parking and retry topics are alternatives; subscription '"
              + subscription.name()
              + "' has both");
    }
    if (parking.isPresent()
        && subscription.ordering() == dev.postbox.core.consumer.Ordering.UNORDERED) {
      throw new IllegalArgumentException(
          "ordered parking needs KEY or PARTITION ordering; subscription '"
              + subscription.name()
              + "' is UNORDERED");
    }
    if (parking.isPresent() && parking.get().tiers().isEmpty()) {
      throw new IllegalArgumentException("parking needs at least one delay tier");
    }
    this.clock = clock;
    this.handler = handler;
    this.batchHandler = batchHandler;
    this.inbox = inbox;
    if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE && inbox.isEmpty()) {
      throw new IllegalArgumentException(
          "subscription '" + subscription.name() + "' is EFFECTIVELY_ONCE and needs an InboxStore");
    }
    if (handler == null && batchHandler == null) {
      throw new IllegalArgumentException("a handler or a batch handler is required");
    }
  }

  /** Counts records read from the broker. */
  public void received(int n) {
    received.addAndGet(n);
  }

  /** Counts records dropped unstarted (revoked or closing). */
  public void abandoned(int n) {
    abandoned.addAndGet(n);
  }

  /** The counters. */
  public ConsumerStats stats() {
    return new ConsumerStats(
        received.get(),
        applied.get(),
        duplicates.get(),
        unknownTypes.get(),
        stale.get(),
        retries.get(),
        givenUp.get(),
        rejected.get(),
        abandoned.get(),
        deadLettered.get(),
        parked.get(),
        unparked.get(),
        leasesExpired.get(),
        leasesLost.get());
  }

  /**
   * Handles one record to the end. Returns {@code true} when it is finished (applied, suppressed,
   * ignored or given up: its offset may be committed), {@code false} when it was abandoned because
   * {@code owned} turned false (it will be redelivered).
   */
  public boolean process(Incoming in, BooleanSupplier owned) {
    Message message = admit(in);
    if (message == null) {
      return true;
    }
    switch (parkBehind(in, message, owned)) {
      case APPENDED -> {
        return true; // its key is parked: it waits there, in order, behind the failing message
      }
      case NOT_OWNED -> {
        return false; // the store was unreachable until the partition was revoked: redelivered
      }
      case NOT_PARKED -> {
        // the key has no parked sequence: apply it now
      }
    }
    MessageHandler h = handler != null ? handler : d -> batchHandler.handle(List.of(d));
    return applyWithRetries(in, message, h, owned);
  }

  /**
   * Handles records of one partition, in offset order, as one batch (one transaction for {@code
   * EFFECTIVELY_ONCE}); if the batch fails, falls back to one record at a time. Returns {@code
   * false} if abandoned part-way.
   */
  public boolean processBatch(List<Incoming> batch, BooleanSupplier owned) {
    Map<Incoming, Message> admitted = new LinkedHashMap<>();
    for (Incoming in : batch) {
      Message m = admit(in);
      if (m != null) {
        admitted.put(in, m);
      }
    }
    if (admitted.isEmpty()) {
      return true;
    }
    if (!owned.getAsBoolean()) {
      return false;
    }
    try {
      if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
        List<UUID> ids = admitted.values().stream().map(Message::id).toList();
        Set<UUID> fresh =
            inbox
                .orElseThrow()
                .processBatch(
                    subscription.name(),
                    ids,
                    (conn, freshIds) -> {
                      List<Delivery> ds = new ArrayList<>();
                      Set<UUID> seen = new HashSet<>();
                      admitted.forEach((in, m) -> {
                        if (freshIds.contains(m.id()) && seen.add(m.id())) {
                          ds.add(new SimpleDelivery(in, m, 1, Optional.of(conn)));
                        }
                      });
                      batchHandler.handle(ds);
                    });
        duplicates.addAndGet(admitted.size() - fresh.size());
        applied.addAndGet(fresh.size());
        Incoming first = admitted.keySet().iterator().next(); // a batch is one partition's
        meters(first).duplicates.increment(admitted.size() - fresh.size());
        meters(first).processed.increment(fresh.size());
      } else {
        List<Delivery> ds = new ArrayList<>();
        admitted.forEach((in, m) -> ds.add(new SimpleDelivery(in, m, 1, Optional.empty())));
        batchHandler.handle(ds);
        applied.addAndGet(ds.size());
        meters(admitted.keySet().iterator().next()).processed.increment(ds.size());
      }
      CrashPoints.hit("consumer.after-effect-before-offset-commit");
      return true;
    } catch (Exception e) {
      log.warn(
          "{}: batch of {} failed ({}); handling its records one at a time",
          subscription.name(),
          admitted.size(),
          e.toString());
      for (Map.Entry<Incoming, Message> entry : admitted.entrySet()) {
        if (!applyWithRetries(
            entry.getKey(), entry.getValue(), d -> batchHandler.handle(List.of(d)), owned)) {
          return false;
        }
      }
      return true;
    }
  }

  /** Decodes and validates; returns null when the record is finished here (ignored or rejected). */
  private Message admit(Incoming in) {
    Message message;
    try {
      message = in.decode().get();
    } catch (DecodingException e) {
      rejected.incrementAndGet();
      givenUp.incrementAndGet();
      Instant now = clock.instant();
      storeDeadLetter(in, null, e, Classification.PERMANENT, 1, now, now);
      try {
        subscription.failureHandler().onUndecodable(in.topic(), in.partition(), in.offset(), e);
      } catch (RuntimeException ex) {
        log.error("{}: onUndecodable threw; the record is skipped", subscription.name(), ex);
      }
      return null;
    }
    if (subscription.eventTypes().isPresent()
        && subscription.eventTypes().get().find(message.type()).isEmpty()) {
      unknownTypes.incrementAndGet();
      meters(in).unknownTypes.increment();
      if (loggedUnknownTypes.add(message.type())) {
        log.info(
            "{}: ignoring messages of unknown type '{}' (logged once per type; counted)",
            subscription.name(),
            message.type());
      }
      return null;
    }
    if (!subscription.allowedTenants().isEmpty()) {
      String reason = null;
      if (message.tenant().isEmpty()) {
        reason = "message " + message.id() + " has no tenant";
      } else if (!subscription.allowedTenants().contains(message.tenant().get())) {
        reason =
            "message " + message.id() + " has tenant '" + message.tenant().get() + "', not allowed";
      }
      if (reason != null) {
        rejected.incrementAndGet();
        TenantRejectedException error = new TenantRejectedException(reason);
        SimpleDelivery d = new SimpleDelivery(in, message, 1, Optional.empty());
        FailureDecision decision = subscription.failureHandler().decide(d, error);
        Instant now = clock.instant();
        giveUp(
            d,
            error,
            decision instanceof FailureDecision.GiveUp g ? g.reason() : reason,
            Classification.PERMANENT,
            now);
        return null;
      }
    }
    return message;
  }

  private boolean applyWithRetries(
      Incoming in, Message message, MessageHandler h, BooleanSupplier owned) {
    Instant firstFailure = null;
    for (int attempt = 1; ; attempt++) {
      if (!owned.getAsBoolean()) {
        return false;
      }
      Throwable e = attemptOnce(in, message, h, attempt);
      if (e == null) {
        return true;
      }
      meters(in).failed.increment();
      SimpleDelivery delivery = new SimpleDelivery(in, message, attempt, Optional.empty());
      if (firstFailure == null) {
        firstFailure = clock.instant(); // our own bookkeeping: never from message headers
      }
      FailureDecision decision = subscription.failureHandler().decide(delivery, e);
      switch (decision) {
        case FailureDecision.GiveUp g -> {
          boolean permanent =
              g.permanent() || e instanceof dev.postbox.core.PermanentMessageException;
          if (!permanent && retriesExhausted.isPresent()) {
            // delayed retries elsewhere (retry topics): finished here once handed off
            return retriesExhausted.get().handOff(in, e, attempt, firstFailure, owned);
          }
          if (!permanent && parking.isPresent() && message.key().isPresent()) {
            // delayed retries off the hot path: park it; later messages of its key follow it there
            // The store is retried while the partition is owned: if the record were abandoned
            // here, a later record of its key would find nothing parked and overtake it.
            Parking pk = parking.get();
            String key = message.key().get();
            boolean stored =
                storeRetry
                    .untilDone(
                        "parking " + position(in) + " (key " + key + ")",
                        owned,
                        () -> {
                          pk.store()
                              .park(
                                  subscription.name(),
                                  key,
                                  parkedRecord(in),
                                  0,
                                  clock.instant().plus(pk.tiers().get(0)),
                                  String.valueOf(e));
                          return true;
                        })
                    .isPresent();
            if (!stored) {
              return false; // revoked before it was parked: redelivered to the next owner
            }
            parked.incrementAndGet();
            meters(in).parked.increment();
            return true;
          }
          giveUp(
              delivery,
              e,
              g.reason(),
              e instanceof MessageConflictException
                  ? Classification.CONFLICT
                  : permanent ? Classification.PERMANENT : Classification.RETRIES_EXHAUSTED,
              firstFailure);
          return true;
        }
        case FailureDecision.Retry r -> {
          retries.incrementAndGet();
          meters(in).retried.increment();
          if (!waitWhileOwned(r.delay(), owned)) {
            return false; // revoked or closing while waiting: redelivered to the next owner
          }
        }
      }
    }
  }

  private static byte[] sha256(byte[] bytes) {
    try {
      return java.security.MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * One attempt to apply {@code message}; returns null when applied (or suppressed), else the
   * failure.
   */
  private Throwable attemptOnce(Incoming in, Message message, MessageHandler h, int attempt) {
    ConsumerMeters.Timers timers = meters.timers(in.topic());
    Span span = startSpan(in, message, attempt);
    ProcessingMdc.put(subscription.name(), in, message, attempt, span);
    long t0 = System.nanoTime();
    Throwable error = null;
    try (Scope ignored = span.makeCurrent()) {
      error = attemptOnceTimed(in, message, h, attempt);
      return error;
    } finally {
      timers.handler().record(Duration.ofNanos(System.nanoTime() - t0));
      if (error != null) {
        span.recordException(error);
        span.setStatus(StatusCode.ERROR, error.getClass().getSimpleName());
      }
      span.end();
      ProcessingMdc.clear();
    }
  }

  /**
   * One CONSUMER span per processing attempt, a child of the context the message carries (the
   * producer's), named and tagged after the OpenTelemetry messaging conventions.
   */
  private Span startSpan(Incoming in, Message message, int attempt) {
    Tracer t = tracer;
    if (t == null) {
      OpenTelemetry otel = openTelemetry != null ? openTelemetry : GlobalOpenTelemetry.get();
      tracer = t = otel.getTracer("dev.postbox");
    }
    return t.spanBuilder("process " + in.topic())
        .setParent(TraceHeaders.extract(message.headers()))
        .setSpanKind(SpanKind.CONSUMER)
        .setAttribute("messaging.system", "kafka")
        .setAttribute("messaging.operation.type", "process")
        .setAttribute("messaging.destination.name", in.topic())
        .setAttribute("messaging.destination.partition.id", Integer.toString(in.partition()))
        .setAttribute("messaging.kafka.offset", in.offset())
        .setAttribute("messaging.consumer.group.name", subscription.name())
        .setAttribute("messaging.message.id", message.id().toString())
        .setAttribute("postbox.type", message.type())
        .setAttribute("postbox.attempt", attempt)
        .startSpan();
  }

  private Throwable attemptOnceTimed(Incoming in, Message message, MessageHandler h, int attempt) {
    try {
      if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
        InboxStore.Outcome outcome =
            inbox
                .orElseThrow()
                .processOnce(
                    subscription.name(),
                    message.id(),
                    sha256(message.payload().unsafeBytes()),
                    conn -> {
                      CrashPoints.hit("consumer.after-inbox-insert");
                      h.handle(new SimpleDelivery(in, message, attempt, Optional.of(conn)));
                    });
        switch (outcome) {
          case APPLIED -> appliedOne(in, message);
          case DUPLICATE -> {
            duplicates.incrementAndGet();
            meters(in).duplicates.increment();
          }
          case CONFLICT -> throw new MessageConflictException(message.id(), message.type());
        }
      } else if (subscription.guarantee() == DeliveryGuarantee.DEDUPLICATED) {
        applyDeduplicated(in, message, h, attempt);
      } else {
        h.handle(new SimpleDelivery(in, message, attempt, Optional.empty()));
        appliedOne(in, message);
      }
      CrashPoints.hit("consumer.after-effect-before-offset-commit");
      return null;
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      return e;
    }
  }

  /**
   * {@code DEDUPLICATED}: claim {@code <subscription>:<message id>}, run the handler, complete with
   * its recorded result (or release the lease if it threw); a duplicate goes to the listener.
   */
  private void applyDeduplicated(Incoming in, Message message, MessageHandler h, int attempt)
      throws Exception {
    SimpleDelivery d = new SimpleDelivery(in, message, attempt, Optional.empty());
    IdempotentApply.Outcome outcome =
        idempotent.apply(
            subscription.name() + ":" + message.id(),
            () -> {
              h.handle(d);
              return d.result;
            },
            new IdempotentApply.Events() {
              @Override
              public void previousLeaseExpired() {
                leasesExpired.incrementAndGet();
                meters(in).leaseExpired.increment();
              }

              @Override
              public void leaseLost() {
                leasesLost.incrementAndGet();
                meters(in).leaseLost.increment();
              }
            });
    if (!outcome.duplicate()) {
      appliedOne(in, message);
      return;
    }
    duplicates.incrementAndGet();
    meters(in).duplicates.increment();
    try {
      idempotency.orElseThrow().onDuplicate().duplicate(d, outcome.storedResult());
    } catch (Exception e) {
      log.warn(
          "{}: the duplicate listener threw; the duplicate stays suppressed",
          subscription.name(),
          e);
    }
  }

  private void appliedOne(Incoming in, Message message) {
    applied.incrementAndGet();
    meters(in).processed.increment();
    meters
        .timers(in.topic())
        .endToEnd()
        .record(Duration.between(message.occurredAt(), clock.instant()));
  }

  private ConsumerMeters.Partition meters(Incoming in) {
    return meters.of(in.topic(), in.partition());
  }

  // ---------------------------------------------------------------- retries elsewhere

  /**
   * Takes a message whose in-place retries of a transient failure ran out, for delayed retries
   * outside the processor (for example Kafka retry topics).
   */
  @FunctionalInterface
  public interface RetriesExhausted {
    /**
     * Hands {@code in} off durably; returns {@code true} once it is safe to finish the record
     * (commit its offset), {@code false} if {@code owned} turned false first (it is redelivered).
     */
    boolean handOff(
        Incoming in, Throwable error, int attempts, Instant firstFailure, BooleanSupplier owned);
  }

  /**
   * One delayed attempt at a record that was handed off: admitted (decoded, validated) and applied
   * like any other, through the inbox for {@code EFFECTIVELY_ONCE}. Returns null when finished
   * (applied, suppressed, ignored or rejected into the dead letters), else the failure.
   */
  public Throwable applyDelayed(Incoming in, int attempt) {
    Message message = admit(in);
    if (message == null) {
      return null;
    }
    Throwable e = attemptOnce(in, message, handlerForParked(), attempt);
    if (e != null) { // applied: counted as applied (a retry topic is not parking)
      meters(in).failed.increment();
    }
    return e;
  }

  /** Gives up a handed-off record after its last delayed attempt: counted and dead-lettered. */
  public void giveUpDelayed(Incoming in, Throwable error, int attempts, Instant firstFailure) {
    givenUp.incrementAndGet();
    Message message = null;
    try {
      message = in.decode().get();
    } catch (RuntimeException ignored) {
      // kept without id and type
    }
    storeDeadLetter(
        in,
        message,
        error,
        error instanceof dev.postbox.core.PermanentMessageException
            ? Classification.PERMANENT
            : Classification.RETRIES_EXHAUSTED,
        attempts,
        firstFailure,
        clock.instant());
  }

  /** Counts a delayed retry. */
  public void retried() {
    retries.incrementAndGet();
  }

  /** Counts a delayed retry of {@code in} (counted under its topic and partition). */
  public void retried(Incoming in) {
    retried();
    meters(in).retried.increment();
  }

  // ---------------------------------------------------------------- ordered parking

  /**
   * Ordered parking settings: the store, the delay tiers of the delayed retries (the head is
   * retried after tier 1, then tier 2...; after the last it is dead-lettered), whether the rest of
   * the key then waits ({@code block}) or continues, and how a stored record becomes an {@link
   * Incoming} again.
   */
  public record Parking(
      ParkingStore store,
      List<Duration> tiers,
      boolean block,
      Function<ParkingStore.ParkedRecord, Incoming> rehydrate) {}

  private static ParkingStore.ParkedRecord parkedRecord(Incoming in) {
    return new ParkingStore.ParkedRecord(
        in.topic(), in.partition(), in.offset(), in.key(), in.value(), in.headers());
  }

  /** What {@link #parkBehind} did with a record. */
  private enum ParkBehind {
    /** Its key has a parked sequence: appended, it waits its turn. */
    APPENDED,
    /** Its key has none: apply it. */
    NOT_PARKED,
    /** The store failed until the record was no longer owned: neither (it is redelivered). */
    NOT_OWNED
  }

  /**
   * If the message's key has a parked sequence, appends it there (it waits its turn). The store is
   * asked again while the record is owned: an answer lost to a database error must never let the
   * record overtake its key's parked head.
   */
  private ParkBehind parkBehind(Incoming in, Message message, BooleanSupplier owned) {
    if (parking.isEmpty() || message.key().isEmpty()) {
      return ParkBehind.NOT_PARKED;
    }
    String key = message.key().get();
    Optional<Boolean> appended =
        storeRetry.untilDone(
            "checking the parked sequence of key " + key + " for " + position(in),
            owned,
            () -> parking.get().store().appendIfParked(subscription.name(), key, parkedRecord(in)));
    if (appended.isEmpty()) {
      return ParkBehind.NOT_OWNED;
    }
    if (appended.get()) {
      parked.incrementAndGet();
      meters(in).parked.increment();
      return ParkBehind.APPENDED;
    }
    return ParkBehind.NOT_PARKED;
  }

  private static String position(Incoming in) {
    return in.topic() + "-" + in.partition() + "@" + in.offset();
  }

  /**
   * Retries the parked sequences that are due: for each leased key, applies its parked messages in
   * order until one fails (rescheduled for its next tier, or dead-lettered after the last) or the
   * sequence is empty. Returns how many parked messages were applied.
   */
  public int drainParked(BooleanSupplier running) {
    if (parking.isEmpty()) {
      return 0;
    }
    Parking pk = parking.get();
    int done = 0;
    for (String key :
        pk.store().claimDue(subscription.name(), clock.instant(), Duration.ofMinutes(1), 20)) {
      if (!running.getAsBoolean()) {
        pk.store().release(subscription.name(), key);
        continue;
      }
      done += drainKey(pk, key, running);
    }
    return done;
  }

  private int drainKey(Parking pk, String key, BooleanSupplier running) {
    int done = 0;
    for (ParkingStore.Parked p : pk.store().sequence(subscription.name(), key)) {
      if (!running.getAsBoolean()) {
        pk.store().release(subscription.name(), key);
        return done;
      }
      Incoming in = pk.rehydrate().apply(p.record());
      Message message = null;
      Throwable error;
      try {
        message = in.decode().get();
        error = attemptOnce(in, message, handlerForParked(), p.attempts() + 2);
      } catch (DecodingException e) {
        error = e;
      }
      if (error != null) {
        meters(in).failed.increment();
      }
      if (error == null) {
        unparked.incrementAndGet(); // applied (committed); its parked row goes next
        pk.store().remove(p.id());
        done++;
        continue;
      }
      int next = p.attempts() + 1;
      boolean permanent = error instanceof dev.postbox.core.PermanentMessageException;
      if (permanent || next >= pk.tiers().size()) {
        givenUp.incrementAndGet();
        storeDeadLetter(
            in,
            message,
            error,
            permanent ? Classification.PERMANENT : Classification.RETRIES_EXHAUSTED,
            next,
            p.dueAt(),
            clock.instant());
        pk.store().remove(p.id());
        if (pk.block()) {
          log.warn(
              "{}: parked head of key {} dead-lettered; the rest of the key stays parked (block)",
              subscription.name(),
              key);
          List<ParkingStore.Parked> rest = pk.store().sequence(subscription.name(), key);
          if (!rest.isEmpty()) {
            pk.store()
                .reschedule(
                    subscription.name(),
                    key,
                    rest.get(0).id(),
                    0,
                    Instant.parse("9999-01-01T00:00:00Z"),
                    "blocked behind a dead letter: " + error);
          }
          return done;
        }
        log.warn(
            "{}: parked message of key {} dead-lettered; the key goes on (the gap is in the dead letters)",
            subscription.name(),
            key);
        continue;
      }
      retries.incrementAndGet();
      meters(in).retried.increment();
      pk.store()
          .reschedule(
              subscription.name(),
              key,
              p.id(),
              next,
              clock.instant().plus(pk.tiers().get(next)),
              String.valueOf(error));
      return done;
    }
    return done;
  }

  private MessageHandler handlerForParked() {
    return handler != null ? handler : d -> batchHandler.handle(List.of(d));
  }

  /**
   * Waits {@code delay} in short slices; returns false as soon as the record is no longer owned.
   */
  private static boolean waitWhileOwned(Duration delay, BooleanSupplier owned) {
    long deadline = System.nanoTime() + delay.toNanos();
    try {
      while (true) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          return true;
        }
        if (!owned.getAsBoolean()) {
          return false;
        }
        Thread.sleep(Duration.ofNanos(Math.min(left, 50_000_000L)));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  private void giveUp(
      Delivery d,
      Throwable error,
      String reason,
      Classification classification,
      Instant firstFailure) {
    givenUp.incrementAndGet();
    storeDeadLetter(
        ((SimpleDelivery) d).in,
        d.message(),
        error,
        classification,
        d.attempt(),
        firstFailure,
        clock.instant());
    try {
      subscription.failureHandler().onGiveUp(d, error, reason);
    } catch (RuntimeException e) {
      log.error("{}: onGiveUp threw; the message is skipped", subscription.name(), e);
    }
  }

  /**
   * Keeps the record, byte-identical, in the dead-letter store. Retried until it succeeds: a record
   * is finished (its offset may be committed) only once its dead letter is safe. A crash before
   * that redelivers it.
   */
  private void storeDeadLetter(
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
    java.io.StringWriter trace = new java.io.StringWriter();
    error.printStackTrace(new java.io.PrintWriter(trace));
    NewDeadLetter letter =
        new NewDeadLetter(
            subscription.name(),
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
            dev.postbox.core.DeadLetters.fingerprint(in.topic(), error),
            attempts,
            firstFailure,
            lastFailure);
    boolean stored =
        storeRetry
            .untilDone(
                "storing the dead letter for " + position(in),
                () -> true, // a record is finished only once its dead letter is safe
                () -> {
                  deadLetters.get().add(letter);
                  return true;
                })
            .isPresent();
    if (!stored) {
      throw new IllegalStateException(
          "interrupted before the dead letter for " + position(in) + " was stored");
    }
    deadLettered.incrementAndGet();
    meters(in).deadLettered.increment();
  }

  /** The {@link Delivery} handed to handlers. */
  private final class SimpleDelivery implements Delivery {
    private final Incoming in;
    private final Message message;
    private final int attempt;
    private final Optional<Connection> connection;
    private Decoded<Object> decoded;
    private byte[] result = new byte[0];

    SimpleDelivery(Incoming in, Message message, int attempt, Optional<Connection> connection) {
      this.in = in;
      this.message = message;
      this.attempt = attempt;
      this.connection = connection;
    }

    @Override
    public Message message() {
      return message;
    }

    @Override
    public String topic() {
      return in.topic();
    }

    @Override
    public int partition() {
      return in.partition();
    }

    @Override
    public long offset() {
      return in.offset();
    }

    @Override
    public int attempt() {
      return attempt;
    }

    @Override
    public Optional<Connection> connection() {
      return connection;
    }

    @Override
    public Decoded<Object> decoded() {
      if (decoded == null) {
        decoded =
            subscription
                .eventTypes()
                .orElseThrow(() ->
                    new IllegalStateException(
                        "subscription '" + subscription.name() + "' has no EventTypes"))
                .decode(message);
      }
      return decoded;
    }

    @Override
    public void recordResult(byte[] result) {
      if (subscription.guarantee() != DeliveryGuarantee.DEDUPLICATED) {
        throw new IllegalStateException(
            "recordResult needs a DEDUPLICATED subscription; '"
                + subscription.name()
                + "' is "
                + subscription.guarantee());
      }
      this.result = result.clone();
    }

    @Override
    public boolean advanceVersion(String entity, long version) {
      Connection c =
          connection.orElseThrow(() ->
              new IllegalStateException(
                  "advanceVersion needs the inbox transaction: use EFFECTIVELY_ONCE"));
      boolean newer;
      try {
        newer = inbox.orElseThrow().advanceVersion(c, entity, version);
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new IllegalStateException("recording the version of " + entity + " failed", e);
      }
      if (!newer) {
        stale.incrementAndGet();
        meters(in).stale.increment();
      }
      return newer;
    }
  }
}
