package dev.postbox.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Envelope;
import dev.postbox.core.engine.DeliveryProcessor.Incoming;
import dev.postbox.core.spi.DeadLetterStore;
import dev.postbox.core.spi.ParkingStore;
import dev.postbox.rabbitmq.RabbitMessages;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/** Turns a parked RabbitMQ delivery back into the engine's {@link Incoming}. Stateless. */
public final class ParkedDeliveries {

  private ParkedDeliveries() {}

  /**
   * A parked delivery as the engine reads it again: the properties rebuilt from the headers the
   * parking store kept ({@link RabbitMessages#deadLetterHeaders}), decoded as the delivery was. Its
   * position is the shard and delivery tag it was read at.
   */
  public static Incoming of(ParkingStore.ParkedRecord p) {
    Map<String, Object> headers = new HashMap<>();
    String contentType = null;
    for (DeadLetterStore.Header h : p.headers()) {
      String text = h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
      if (h.name().equals("content-type")) {
        contentType = text;
      } else if (text != null) {
        headers.put(h.name(), text);
      }
    }
    AMQP.BasicProperties properties =
        new AMQP.BasicProperties.Builder().contentType(contentType).headers(headers).build();
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
