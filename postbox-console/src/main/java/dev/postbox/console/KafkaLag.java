package dev.postbox.console;

import dev.postbox.admin.ConsumerLagSource;
import dev.postbox.kafka.ConsumerLagProbe;
import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
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
 *
 * <p>A reading that outlasts the page's wait is not thrown away: it goes on (bounded by the Kafka
 * client's own timeouts, which are longer than a page's wait), keeps its warm probe, and the next
 * page that tries takes its answer. A Kafka that is slow but up (a cold client on a busy machine)
 * therefore shows its lag on a later page instead of reading as unreachable on every try.
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
  private boolean taken; // whether reading's outcome was handed to a page; guarded by this

  KafkaLag(Supplier<ConsumerLagProbe> probes, Dependency kafka, Duration timeout) {
    this.probes = probes;
    this.kafka = kafka;
    this.timeout = timeout;
  }

  @Override
  public List<PartitionLag> read() {
    try {
      return kafka.call(this::readWithinTimeout);
    } catch (CallNotPermittedException | TimeoutException e) {
      return List.of(); // a reading that timed out goes on; the next try takes its answer
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      worker.execute(this::closeProbe);
      return List.of();
    }
  }

  private synchronized List<PartitionLag> readWithinTimeout() throws Exception {
    if (reading == null || taken) {
      reading = worker.submit(this::readNow);
      taken = false;
    }
    try {
      List<PartitionLag> lag = reading.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      taken = true;
      return lag;
    } catch (TimeoutException e) {
      throw new TimeoutException("no answer within " + timeout.toMillis() + " ms");
    } catch (ExecutionException e) {
      taken = true;
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  private List<PartitionLag> readNow() {
    try {
      if (probe == null) {
        probe = probes.get();
      }
      return probe.read().stream()
          .map(p ->
              new PartitionLag(
                  p.group(), p.topic(), p.partition(), p.offsetLag(), p.oldestUnprocessedAge()))
          .toList();
    } catch (RuntimeException e) {
      closeProbe(); // whether or not a page still waits: no client reconnects after a failure
      throw e;
    }
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
