package dev.postbox.console;

import dev.postbox.admin.QueueLagSource;
import dev.postbox.core.consumer.QueueLag;
import dev.postbox.rabbitmq.RabbitLagProbe;
import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;

/**
 * The dashboard's RabbitMQ queue lag through the RabbitMQ circuit, as a {@link BoundedReading}: a
 * page waits for it at most {@code timeout}; while RabbitMQ is unreachable the queues are empty. A
 * failed reading closes the probe's connection; a reading that outlasts the page's wait goes on,
 * bounded by the client's connection timeout.
 */
final class RabbitLag implements QueueLagSource, AutoCloseable {

  private final BoundedReading<RabbitLagProbe, QueueLag> reading;

  RabbitLag(Supplier<RabbitLagProbe> probes, Dependency rabbitmq, Duration timeout) {
    this.reading =
        new BoundedReading<>(
            probes, RabbitLagProbe::read, rabbitmq, timeout, "postbox-console-rabbitmq-lag");
  }

  @Override
  public List<QueueLag> read() {
    return reading.read();
  }

  @Override
  public void close() {
    reading.close();
  }
}
