package dev.postbox.console;

import io.github.resilience4j.circuitbreaker.CallNotPermittedException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A broker's reading for the dashboard (Kafka's or RabbitMQ's lag) through its circuit ({@link
 * Dependency}), made by a probe on a worker thread that a page waits on for at most {@code timeout}
 * (whatever the client does): while the broker is unreachable the reading is empty (the dashboard
 * says so and shows the database's figures). A failed reading closes the probe on the worker, so
 * that no client keeps reconnecting in the background; the next try builds a new one.
 *
 * <p>A reading that outlasts the page's wait is not thrown away: it goes on (bounded by the
 * client's own timeouts, which are longer than a page's wait), keeps its warm probe, and the next
 * page that tries takes its answer. A broker that is slow but up (a cold client on a busy machine)
 * therefore shows its reading on a later page instead of reading as unreachable on every try.
 *
 * @param <P> the probe
 * @param <T> one row of the reading
 */
final class BoundedReading<P extends AutoCloseable, T> implements AutoCloseable {

  private final Supplier<P> probes;
  private final Function<P, List<T>> read;
  private final Dependency broker;
  private final Duration timeout;
  private final ExecutorService worker;
  private P probe; // confined to the worker
  private Future<List<T>> reading; // guarded by this
  private boolean taken; // whether reading's outcome was handed to a page; guarded by this

  /**
   * @param thread the worker thread's name
   */
  BoundedReading(
      Supplier<P> probes,
      Function<P, List<T>> read,
      Dependency broker,
      Duration timeout,
      String thread) {
    this.probes = probes;
    this.read = read;
    this.broker = broker;
    this.timeout = timeout;
    this.worker =
        Executors.newSingleThreadExecutor(r -> {
          Thread t = new Thread(r, thread);
          t.setDaemon(true);
          return t;
        });
  }

  /** The reading, or empty while the broker is unreachable or did not answer within the wait. */
  List<T> read() {
    try {
      return broker.call(this::readWithinTimeout);
    } catch (CallNotPermittedException | TimeoutException e) {
      return List.of(); // a reading that timed out goes on; the next try takes its answer
    } catch (Error e) {
      throw e;
    } catch (Throwable e) {
      worker.execute(this::closeProbe);
      return List.of();
    }
  }

  private synchronized List<T> readWithinTimeout() throws Exception {
    if (reading == null || taken) {
      reading = worker.submit(this::readNow);
      taken = false;
    }
    try {
      List<T> rows = reading.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      taken = true;
      return rows;
    } catch (TimeoutException e) {
      throw new TimeoutException("no answer within " + timeout.toMillis() + " ms");
    } catch (ExecutionException e) {
      taken = true;
      throw e.getCause() instanceof Exception cause ? cause : e;
    }
  }

  private List<T> readNow() {
    try {
      if (probe == null) {
        probe = probes.get();
      }
      return read.apply(probe);
    } catch (RuntimeException e) {
      closeProbe(); // whether or not a page still waits: no client reconnects after a failure
      throw e;
    }
  }

  private void closeProbe() {
    if (probe != null) {
      P p = probe;
      probe = null;
      try {
        p.close();
      } catch (Exception e) {
        // the probe is given up either way
      }
    }
  }

  @Override
  public void close() {
    worker.execute(this::closeProbe);
    worker.shutdown();
  }
}
