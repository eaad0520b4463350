package dev.postbox.console;

import dev.postbox.admin.QueueLagSource;
import dev.postbox.core.consumer.QueueLag;
import dev.postbox.rabbitmq.RabbitLagProbe;
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
 * The dashboard's RabbitMQ queue lag through the RabbitMQ circuit ({@link Dependency}), read on a
 * worker thread that a page waits on for at most {@code timeout}, as {@link KafkaLag} reads
 * Kafka's: while RabbitMQ is unreachable the queues are empty (the dashboard says so) and the page
 * shows the database's figures. A failed reading closes the probe (its connection) on the worker;
 * the next try builds a new one. A reading that outlasts the page's wait goes on (bounded by the
 * client's connection timeout) and the next page that tries takes its answer.
 */
final class RabbitLag implements QueueLagSource, AutoCloseable {

  private final Supplier<RabbitLagProbe> probes;
  private final Dependency rabbitmq;
  private final Duration timeout;
  private final ExecutorService worker =
      Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "postbox-console-rabbitmq-lag");
        t.setDaemon(true);
        return t;
      });
  private RabbitLagProbe probe; // confined to the worker
  private Future<List<QueueLag>> reading; // guarded by this
  private boolean taken; // whether reading's outcome was handed to a page; guarded by this

  RabbitLag(Supplier<RabbitLagProbe> probes, Dependency rabbitmq, Duration timeout) {
    this.probes = probes;
    this.rabbitmq = rabbitmq;
    this.timeout = timeout;
  }

  @Override
  public List<QueueLag> read() {
    try {
      return rabbitmq.call(this::readWithinTimeout);
    } catch (CallNotPermittedException | TimeoutException e) {
      return List.of(); // a reading that timed out goes on; the next try takes its answer
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      worker.execute(this::closeProbe);
      return List.of();
    }
  }

  private synchronized List<QueueLag> readWithinTimeout() throws Exception {
    if (reading == null || taken) {
      reading = worker.submit(this::readNow);
      taken = false;
    }
    try {
      List<QueueLag> lag = reading.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      taken = true;
      return lag;
    } catch (TimeoutException e) {
      throw new TimeoutException("no answer within " + timeout.toMillis() + " ms");
    } catch (ExecutionException e) {
      taken = true;
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  private List<QueueLag> readNow() {
    try {
      if (probe == null) {
        probe = probes.get();
      }
      return probe.read();
    } catch (RuntimeException e) {
      closeProbe(); // whether or not a page still waits: no connection is left half-open
      throw e;
    }
  }

  private void closeProbe() {
    if (probe != null) {
      RabbitLagProbe p = probe;
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
