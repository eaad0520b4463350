package dev.postbox.core.engine;

import dev.postbox.core.DeliveryGuarantee;
import dev.postbox.core.Message;
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
      return new EngineDelivery(this, in, message, attempt, connection);
    }
  }

  private final Factory context;
  private final Incoming in;
  private final Message message;
  private final int attempt;
  private final Optional<Connection> connection;
  private Decoded<Object> decoded;
  private byte[] result = new byte[0];

  private EngineDelivery(
      Factory context, Incoming in, Message message, int attempt, Optional<Connection> connection) {
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

  /** The result recorded by the handler ({@code DEDUPLICATED}), empty when none. */
  byte[] result() {
    return result;
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
  public void recordResult(byte[] result) {
    Subscription subscription = context.subscription();
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
