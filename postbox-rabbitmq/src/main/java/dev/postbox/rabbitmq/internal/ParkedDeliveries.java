package dev.postbox.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.rabbitmq.RabbitMessages;
import java.nio.charset.StandardCharsets;

/** Turns a parked RabbitMQ delivery back into the engine's {@link Incoming}. Stateless. */
public final class ParkedDeliveries {

  private ParkedDeliveries() {}

  /**
   * A parked delivery as the engine reads it again: the properties rebuilt from the headers the
   * parking store kept ({@link RabbitMessages#deadLetterHeaders}), decoded as the delivery was. Its
   * position is the shard and delivery tag it was read at.
   */
  public static Incoming of(ParkingStore.ParkedRecord p) {
    AMQP.BasicProperties properties = RabbitMessages.storedProperties(p.headers());
    String routingKey = p.key() == null ? "" : new String(p.key(), StandardCharsets.UTF_8);
    Envelope envelope = new Envelope(p.offset(), true, "", routingKey);
    byte[] body = p.value();
    return new Incoming(
        p.topic(),
        p.partition(),
        p.offset(),
        () -> RabbitMessages.fromDelivery(p.topic(), envelope, properties, body),
        p.key(),
        body,
        p.headers());
  }
}
