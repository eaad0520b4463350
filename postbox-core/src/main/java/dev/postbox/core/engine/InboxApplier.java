package dev.postbox.core.engine;

import dev.postbox.core.CrashPoints;
import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.MessageConflictException;
import dev.postbox.core.consumer.BatchHandler;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.DuplicateListener;
import dev.postbox.core.consumer.MessageHandler;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.OffsetStore;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies a message (or a partition's batch) once under the subscription's guarantee: through the
 * inbox in the effect's transaction for {@code EFFECTIVELY_ONCE}, under an idempotency lease for
 * {@code DEDUPLICATED}, directly otherwise; counts what was applied or suppressed. Thread-safe.
 */
final class InboxApplier {

  // the processor's logger name, which operators configure
  private static final Logger log = LoggerFactory.getLogger(DeliveryProcessor.class);

  private final Subscription subscription;
  private final Optional<InboxStore> inbox;
  private final Optional<OffsetStore> offsets;
  private final Optional<IdempotentApply> idempotent;
  private final Optional<DuplicateListener> onDuplicate;
  private final EngineDelivery.Factory deliveries;
  private final DeliveryTelemetry telemetry;

  InboxApplier(
      Subscription subscription,
      Optional<InboxStore> inbox,
      Optional<OffsetStore> offsets,
      Optional<DeliveryProcessor.Idempotency> idempotency,
      EngineDelivery.Factory deliveries,
      DeliveryTelemetry telemetry) {
    this.subscription = subscription;
    this.inbox = inbox;
    this.offsets = offsets;
    this.idempotent =
        idempotency.map(i ->
            new IdempotentApply(
                i.store(),
                i.sleeper(),
                subscription.idempotencyLease(),
                subscription.idempotencyTtl()));
    this.onDuplicate = idempotency.map(DeliveryProcessor.Idempotency::onDuplicate);
    this.deliveries = deliveries;
    this.telemetry = telemetry;
  }

  /**
   * One traced attempt to apply {@code message}; returns null when applied (or suppressed), else
   * the failure.
   */
  Throwable attempt(
      Incoming in, Message message, MessageHandler h, int attempt, BooleanSupplier owned) {
    return telemetry.traced(in, message, attempt, () -> applyOnce(in, message, h, attempt, owned));
  }

  private Throwable applyOnce(
      Incoming in, Message message, MessageHandler h, int attempt, BooleanSupplier owned) {
    try {
      if (offsets.isPresent()) {
        applyAtOffset(in, message, h, attempt, owned);
      } else if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
        applyEffectivelyOnce(in, message, h, attempt, owned);
      } else if (subscription.guarantee() == DeliveryGuarantee.DEDUPLICATED) {
        applyDeduplicated(in, message, h, attempt);
      } else {
        h.handle(deliveries.of(in, message, attempt, Optional.empty()));
        telemetry.applied(in, message);
      }
      CrashPoints.hit(CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_OFFSET_COMMIT);
      return null;
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable e) {
      return e;
    }
  }

  /**
   * {@code EFFECTIVELY_ONCE} with an offset store: the effect and the partition's next offset in
   * one transaction; a record below the stored offset is a duplicate.
   */
  private void applyAtOffset(
      Incoming in, Message message, MessageHandler h, int attempt, BooleanSupplier owned)
      throws Exception {
    boolean applied =
        offsets
            .orElseThrow()
            .applyAt(
                subscription.name(),
                in.topic(),
                in.partition(),
                in.offset(),
                conn -> {
                  CrashPoints.hit(CrashPoints.CONSUMER_AFTER_INBOX_INSERT);
                  h.handle(deliveries.of(in, message, attempt, Optional.of(conn)));
                  Ownership.confirmBeforeCommit(owned);
                });
    if (applied) {
      telemetry.applied(in, message);
    } else {
      telemetry.duplicates(in, 1);
    }
  }

  /**
   * {@code EFFECTIVELY_ONCE}: the inbox row, then the effect and its recorded result, in one
   * transaction; after it (or for a duplicate, with the stored result) the handler's {@link
   * MessageHandler#completed}.
   */
  private void applyEffectivelyOnce(
      Incoming in, Message message, MessageHandler h, int attempt, BooleanSupplier owned)
      throws Exception {
    InboxStore.Processed processed =
        inbox
            .orElseThrow()
            .processOnceWithResult(
                subscription.name(),
                InboxKeys.of(message),
                sha256(message.payload().unsafeBytes()),
                conn -> {
                  CrashPoints.hit(CrashPoints.CONSUMER_AFTER_INBOX_INSERT);
                  EngineDelivery d = deliveries.of(in, message, attempt, Optional.of(conn));
                  h.handle(d);
                  Ownership.confirmBeforeCommit(owned);
                  return d.recordedResult();
                });
    boolean duplicate;
    switch (processed.outcome()) {
      case APPLIED -> {
        telemetry.applied(in, message);
        duplicate = false;
      }
      case DUPLICATE -> {
        telemetry.duplicates(in, 1);
        duplicate = true;
      }
      case CONFLICT -> throw new MessageConflictException(message.id(), message.type());
      default -> throw new IllegalStateException("unknown outcome " + processed.outcome());
    }
    CrashPoints.hit(CrashPoints.CONSUMER_AFTER_COMMIT_BEFORE_COMPLETED);
    h.completed(
        deliveries.of(in, message, attempt, Optional.empty()), processed.result(), duplicate);
  }

  /**
   * {@code DEDUPLICATED}: claim {@code <subscription>:<message id>}, run the handler, complete with
   * its recorded result (or release the lease if it threw); a duplicate goes to the listener.
   */
  private void applyDeduplicated(Incoming in, Message message, MessageHandler h, int attempt)
      throws Exception {
    EngineDelivery d = deliveries.of(in, message, attempt, Optional.empty());
    IdempotentApply.Outcome outcome =
        idempotent
            .orElseThrow()
            .apply(
                subscription.name() + ":" + InboxKeys.of(message),
                () -> {
                  h.handle(d);
                  return d.result();
                },
                new IdempotentApply.Events() {
                  @Override
                  public void previousLeaseExpired() {
                    telemetry.leasesExpired.incrementAndGet();
                    telemetry.meters(in).leaseExpired.increment();
                  }

                  @Override
                  public void leaseLost() {
                    telemetry.leasesLost.incrementAndGet();
                    telemetry.meters(in).leaseLost.increment();
                  }
                });
    if (!outcome.duplicate()) {
      telemetry.applied(in, message);
      return;
    }
    telemetry.duplicates(in, 1);
    try {
      onDuplicate.orElseThrow().duplicate(d, outcome.storedResult());
    } catch (Exception e) {
      log.warn(
          "{}: the duplicate listener threw; the duplicate stays suppressed",
          subscription.name(),
          e);
    }
  }

  /**
   * Applies admitted records of one partition, in offset order, as one batch (one inbox transaction
   * for {@code EFFECTIVELY_ONCE}, where duplicates are left out). Throws when the batch failed;
   * nothing of it is then applied under {@code EFFECTIVELY_ONCE}.
   */
  void applyBatch(Map<Incoming, Message> admitted, BatchHandler batchHandler, BooleanSupplier owned)
      throws Exception {
    Incoming first = admitted.keySet().iterator().next(); // a batch is one partition's
    if (subscription.guarantee() == DeliveryGuarantee.EFFECTIVELY_ONCE) {
      List<UUID> ids = admitted.values().stream().map(InboxKeys::of).toList();
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
                      UUID key = InboxKeys.of(m);
                      if (freshIds.contains(key) && seen.add(key)) {
                        ds.add(deliveries.ofBatch(in, m, Optional.of(conn)));
                      }
                    });
                    batchHandler.handle(ds);
                    Ownership.confirmBeforeCommit(owned);
                  });
      telemetry.duplicates(first, admitted.size() - fresh.size());
      telemetry.applied.addAndGet(fresh.size());
      telemetry.meters(first).processed.increment(fresh.size());
    } else {
      List<Delivery> ds = new ArrayList<>();
      admitted.forEach((in, m) -> ds.add(deliveries.ofBatch(in, m, Optional.empty())));
      batchHandler.handle(ds);
      telemetry.applied.addAndGet(ds.size());
      telemetry.meters(first).processed.increment(ds.size());
    }
    CrashPoints.hit(CrashPoints.CONSUMER_AFTER_EFFECT_BEFORE_OFFSET_COMMIT);
  }

  private static byte[] sha256(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
