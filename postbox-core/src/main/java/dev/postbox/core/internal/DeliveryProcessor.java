package dev.postbox.core.internal;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.DecodingException;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.codec.Decoded;
import dev.postbox.core.consumer.BatchHandler;
import dev.postbox.core.consumer.ConsumerStats;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.FailureDecision;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.consumer.TenantRejectedException;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.DeadLetterStore.Classification;
import dev.postbox.core.spi.DeadLetterStore.NewDeadLetter;
import dev.postbox.core.spi.InboxStore;
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
  private final Optional<DeadLetterStore> deadLetters;
  private final Clock clock;
  private final Set<String> loggedUnknownTypes = ConcurrentHashMap.newKeySet();

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

  public DeliveryProcessor(
      Subscription subscription,
      MessageHandler handler,
      BatchHandler batchHandler,
      Optional<InboxStore> inbox,
      Optional<DeadLetterStore> deadLetters,
      Clock clock) {
    this.subscription = subscription;
    this.deadLetters = deadLetters;
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
        deadLettered.get());
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
      } else {
        List<Delivery> ds = new ArrayList<>();
        admitted.forEach((in, m) -> ds.add(new SimpleDelivery(in, m, 1, Optional.empty())));
        batchHandler.handle(ds);
        applied.addAndGet(ds.size());
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
      SimpleDelivery delivery = null;
      try {
        if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
          int a = attempt;
          SimpleDelivery[] holder = new SimpleDelivery[1];
          boolean fresh =
              inbox
                  .orElseThrow()
                  .processOnce(
                      subscription.name(),
                      message.id(),
                      conn -> {
                        CrashPoints.hit("consumer.after-inbox-insert");
                        holder[0] = new SimpleDelivery(in, message, a, Optional.of(conn));
                        h.handle(holder[0]);
                      });
          (fresh ? applied : duplicates).incrementAndGet();
        } else {
          delivery = new SimpleDelivery(in, message, attempt, Optional.empty());
          h.handle(delivery);
          applied.incrementAndGet();
        }
        CrashPoints.hit("consumer.after-effect-before-offset-commit");
        return true;
      } catch (VirtualMachineError e) {
        throw e;
      } catch (Throwable e) {
        if (delivery == null) {
          delivery = new SimpleDelivery(in, message, attempt, Optional.empty());
        }
        if (firstFailure == null) {
          firstFailure = clock.instant(); // our own bookkeeping: never from message headers
        }
        FailureDecision decision = subscription.failureHandler().decide(delivery, e);
        switch (decision) {
          case FailureDecision.GiveUp g -> {
            boolean permanent =
                g.permanent() || e instanceof dev.postbox.core.PermanentMessageException;
            giveUp(
                delivery,
                e,
                g.reason(),
                permanent ? Classification.PERMANENT : Classification.RETRIES_EXHAUSTED,
                firstFailure);
            return true;
          }
          case FailureDecision.Retry r -> {
            retries.incrementAndGet();
            if (!waitWhileOwned(r.delay(), owned)) {
              return false; // revoked or closing while waiting: redelivered to the next owner
            }
          }
        }
      }
    }
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
    for (int i = 1; ; i++) {
      try {
        deadLetters.get().add(letter);
        deadLettered.incrementAndGet();
        return;
      } catch (RuntimeException e) {
        log.warn(
            "{}: storing the dead letter for {}-{}@{} failed (attempt {}); retrying",
            subscription.name(),
            in.topic(),
            in.partition(),
            in.offset(),
            i,
            e);
        try {
          Thread.sleep(Math.min(5_000, 100L << Math.min(i, 6)));
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException("interrupted before the dead letter was stored", ie);
        }
      }
    }
  }

  /** The {@link Delivery} handed to handlers. */
  private final class SimpleDelivery implements Delivery {
    private final Incoming in;
    private final Message message;
    private final int attempt;
    private final Optional<Connection> connection;
    private Decoded<Object> decoded;

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
      }
      return newer;
    }
  }
}
