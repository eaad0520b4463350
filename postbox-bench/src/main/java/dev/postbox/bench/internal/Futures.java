package dev.postbox.bench.internal;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/** Waiting for producer acknowledgements. */
final class Futures {

  private Futures() {}

  /** Waits for every future and clears the list; fails on the first failure. */
  static void awaitAll(List<? extends Future<?>> futures) {
    try {
      for (Future<?> f : futures) {
        f.get();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for acknowledgements", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("a send failed: " + e.getCause(), e.getCause());
    }
    futures.clear();
  }
}
