package dev.postbox.console;

import dev.postbox.admin.ConsumerLagSource;
import dev.postbox.kafka.ConsumerLagProbe;
import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;

/**
 * The dashboard's Kafka lag through the Kafka circuit, as a {@link BoundedReading}: a page waits
 * for it at most {@code timeout}; while Kafka is unreachable the lag is empty.
 */
final class KafkaLag implements ConsumerLagSource, AutoCloseable {

  private final BoundedReading<ConsumerLagProbe, PartitionLag> reading;

  KafkaLag(Supplier<ConsumerLagProbe> probes, Dependency kafka, Duration timeout) {
    this.reading =
        new BoundedReading<>(probes, KafkaLag::read, kafka, timeout, "postbox-console-kafka-lag");
  }

  private static List<PartitionLag> read(ConsumerLagProbe probe) {
    return probe.read().stream()
        .map(p ->
            new PartitionLag(
                p.group(), p.topic(), p.partition(), p.offsetLag(), p.oldestUnprocessedAge()))
        .toList();
  }

  @Override
  public List<PartitionLag> read() {
    return reading.read();
  }

  @Override
  public void close() {
    reading.close();
  }
}
