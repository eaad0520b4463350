package dev.postbox.console;

import dev.postbox.admin.ConsumerLagSource;
import dev.postbox.kafka.ConsumerLagProbe;
import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The dashboard's Kafka lag through the Kafka circuit ({@link Dependency}), read on a worker thread
 * that a page waits on for at most {@code timeout} (whatever the Kafka clients do): while Kafka is
 * unreachable the lag is empty (the dashboard says so and shows the database's figures). A failed
 * reading closes the probe on the worker, so that no Kafka client keeps reconnecting in the
 * background; the next try builds a new one.
 */
final class KafkaLag implements ConsumerLagSource, AutoCloseable {

  private final Supplier<ConsumerLagProbe> probes;
  private final Dependency kafka;
  private final Duration timeout;
  private final ExecutorService worker =
      Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "postbox-console-kafka-lag");
        t.setDaemon(true);
        return t;
      });
  private ConsumerLagProbe probe; // confined to the worker
  private Future<List<PartitionLag>> reading; // guarded by this

  KafkaLag(Supplier<ConsumerLagProbe> probes, Dependency kafka, Duration timeout) {
    this.probes = probes;
    this.kafka = kafka;
    this.timeout = timeout;
  }

  @Override
  public List<PartitionLag> read() {
    try {
      return kafka.call(this::readWithinTimeout);
    } catch (CallNotPermittedException e) {
      return List.of();
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      worker.execute(this::closeProbe);
      return List.of();
    }
  }

  private synchronized List<PartitionLag> readWithinTimeout() throws Exception {
    if (reading == null || reading.isDone()) {
      reading = worker.submit(this::readNow);
    }
    try {
      return reading.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new TimeoutException("no answer within " + timeout.toMillis() + " ms");
    }
  }

  private List<PartitionLag> readNow() {
    if (probe == null) {
      probe = probes.get();
    }
    return probe.read().stream()
        .map(p ->
            new PartitionLag(
                p.group(), p.topic(), p.partition(), p.offsetLag(), p.oldestUnprocessedAge()))
        .toList();
  }

  private void closeProbe() {
    if (probe != null) {
      ConsumerLagProbe p = probe;
      probe = null;
      p.close();
    }
  }

  @Override
  public void close() {
    worker.execute(this::closeProbe);
    worker.shutdown();
  }
}
