package dev.postbox.core.engine;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
import dev.postbox.core.Payload;
import dev.postbox.core.codec.Decoded;
import dev.postbox.core.consumer.Delivery;
import dev.postbox.core.consumer.Subscription;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.spi.InboxStore;
import dev.postbox.core.spi.OffsetStore;
import java.sql.Connection;
import java.util.Optional;

/**
 * The {@link Delivery} handed to handlers: one message at its position, with its attempt number and
 * (for {@code EFFECTIVELY_ONCE}) the inbox transaction. Used by one handler call at a time.
 */
final class EngineDelivery implements Delivery {

  /** Makes the deliveries of one subscription. */
  record Factory(
      Subscription subscription,
      Optional<InboxStore> inbox,
      Optional<OffsetStore> offsets,
      DeliveryTelemetry telemetry) {

    EngineDelivery of(Incoming in, Message message, int attempt, Optional<Connection> connection) {
      return new EngineDelivery(this, in, message, attempt, connection, false);
    }

    /** A delivery of a batch: it cannot record a result. */
    EngineDelivery ofBatch(Incoming in, Message message, Optional<Connection> connection) {
      return new EngineDelivery(this, in, message, 1, connection, true);
    }
  }

  private final Factory context;
  private final Incoming in;
  private final Message message;
  private final int attempt;
  private final Optional<Connection> connection;
  private final boolean inBatch;
  private Decoded<Object> decoded;
  private Payload result;

  private EngineDelivery(
      Factory context,
      Incoming in,
      Message message,
      int attempt,
      Optional<Connection> connection,
      boolean inBatch) {
    this.inBatch = inBatch;
    this.context = context;
    this.in = in;
    this.message = message;
    this.attempt = attempt;
    this.connection = connection;
  }

  /** The record this delivery was read as. */
  Incoming incoming() {
    return in;
  }

  /** The bytes of the result recorded by the handler ({@code DEDUPLICATED}), empty when none. */
  byte[] result() {
    return result == null ? new byte[0] : result.unsafeBytes();
  }

  /** The result recorded by the handler, if any. */
  Optional<Payload> recordedResult() {
    return Optional.ofNullable(result);
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
      Subscription subscription = context.subscription();
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
  public void recordResult(Payload result) {
    java.util.Objects.requireNonNull(result, "result");
    Subscription subscription = context.subscription();
    DeliveryGuarantee g = subscription.guarantee();
    if (g != DeliveryGuarantee.DEDUPLICATED && g != DeliveryGuarantee.EFFECTIVELY_ONCE) {
      throw new IllegalStateException(
          "recordResult needs an EFFECTIVELY_ONCE or DEDUPLICATED subscription; '"
              + subscription.name()
              + "' is "
              + g);
    }
    if (inBatch) {
      throw new IllegalStateException(
          "recordResult is not available to a batch handler (subscription '"
              + subscription.name()
              + "'); use a MessageHandler");
    }
    this.result = result;
  }

  @Override
  public boolean advanceVersion(String entity, long version) {
    Connection c =
        connection.orElseThrow(() ->
            new IllegalStateException(
                "advanceVersion needs the inbox transaction: use EFFECTIVELY_ONCE"));
    boolean newer;
    try {
      newer =
          context.inbox().isPresent()
              ? context.inbox().get().advanceVersion(c, entity, version)
              : context.offsets().orElseThrow().advanceVersion(c, entity, version);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("recording the version of " + entity + " failed", e);
    }
    if (!newer) {
      context.telemetry().stale.incrementAndGet();
      context.telemetry().meters(in).stale.increment();
    }
    return newer;
  }
}
