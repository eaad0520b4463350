package dev.postbox.core.engine;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Runs tasks on virtual threads, strictly one after another per lane key and concurrently across
 * keys, with at most {@code concurrency} tasks running at once. Written here because the JDK has no
 * keyed serial executor: this is the key-ordered concurrency that lets one partition be processed
 * by many threads without reordering a key.
 *
 * <p>Tasks must not throw (a throwing task is logged by the caller's wrapper); a failed task never
 * blocks its lane. Thread-safe.
 */
public final class KeyedExecutor implements AutoCloseable {

  private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

  private final ExecutorService threads;
  private final Semaphore permits;
  private final ConcurrentHashMap<Object, CompletableFuture<Void>> tails =
      new ConcurrentHashMap<>();
  private final Object multiLane = new Object();

  public KeyedExecutor(String name, int concurrency) {
    this.threads =
        Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name(name + "-", 0).factory());
    this.permits = new Semaphore(concurrency);
  }

  /**
   * Runs {@code task} after every earlier task of {@code lane}; a {@code null} lane has no
   * ordering.
   */
  public void submit(Object lane, Runnable task) {
    Runnable limited = limited(task);
    if (lane == null) {
      threads.execute(limited);
      return;
    }
    @SuppressWarnings("unchecked")
    CompletableFuture<Void>[] created = new CompletableFuture[1];
    tails.compute(
        lane,
        (k, tail) -> {
          CompletableFuture<Void> prev = tail == null ? DONE : tail.exceptionally(e -> null);
          created[0] = prev.thenRunAsync(limited, threads);
          return created[0];
        });
    CompletableFuture<Void> mine = created[0];
    mine.whenComplete((v, e) -> tails.remove(lane, mine)); // forget the lane once idle
  }

  /**
   * Runs {@code task} after every earlier task of each of {@code lanes} (none may be {@code null}),
   * and before any later task of any of them: a task that holds several keys at once, such as a
   * batch of records of several keys, with each key in at most one running task. Multi-lane
   * submissions are made one at a time, so two of them can never wait for each other. (Not an
   * overload of {@link #submit(Object, Runnable)}: a {@code null} lane, unordered, would pick it.)
   */
  public void submitAcross(java.util.Collection<?> lanes, Runnable task) {
    if (lanes.size() == 1) {
      submit(lanes.iterator().next(), task);
      return;
    }
    CompletableFuture<Void> done = new CompletableFuture<>();
    java.util.List<CompletableFuture<Void>> before = new java.util.ArrayList<>(lanes.size());
    synchronized (multiLane) {
      for (Object lane : lanes) {
        java.util.Objects.requireNonNull(lane, "lane");
        tails.compute(
            lane,
            (k, tail) -> {
              if (tail != null) {
                before.add(tail);
              }
              return done;
            });
      }
    }
    for (Object lane : lanes) {
      done.whenComplete((v, e) -> tails.remove(lane, done)); // forget the lane once idle
    }
    CompletableFuture.allOf(before.toArray(CompletableFuture[]::new))
        .handle((v, e) -> null) // a failed task never blocks its lanes
        .thenRunAsync(limited(task), threads)
        // run, failed or rejected (closed): the lanes are released
        .whenComplete((v, e) -> done.complete(null));
  }

  /** {@code task} run under one of the {@code concurrency} permits. */
  private Runnable limited(Runnable task) {
    return () -> {
      permits.acquireUninterruptibly();
      try {
        task.run();
      } finally {
        permits.release();
      }
    };
  }

  /** Number of lanes with queued or running work. */
  public int activeLanes() {
    return tails.size();
  }

  @Override
  public void close() {
    threads.shutdown();
    try {
      threads.awaitTermination(Duration.ofSeconds(5).toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    threads.shutdownNow();
  }
}
