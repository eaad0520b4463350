package dev.postbox.bench.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Command;
import com.rabbitmq.client.TrafficListener;
import java.util.UUID;

/**
 * The receipt of each delivery on a RabbitMQ connection: the client's traffic listener sees every
 * inbound command as its reader thread assembles it, before any consumer code runs, so a {@code
 * basic.deliver}'s message id and that instant are recorded in {@link E2eTimes} (the first receipt
 * of an id counts, as for the other consumers). Outbound commands are ignored.
 */
final class DeliveryReceipts implements TrafficListener {

  private final E2eTimes times;

  DeliveryReceipts(E2eTimes times) {
    this.times = times;
  }

  @Override
  public void write(Command outbound) {}

  @Override
  public void read(Command inbound) {
    if (inbound.getMethod() instanceof AMQP.Basic.Deliver
        && inbound.getContentHeader() instanceof AMQP.BasicProperties props
        && props.getMessageId() != null) {
      try {
        times.received(UUID.fromString(props.getMessageId()), E2eTimes.nowMicros());
      } catch (IllegalArgumentException notOurs) {
        // a message id that is not a UUID is not one of the race's messages
      }
    }
  }
}
