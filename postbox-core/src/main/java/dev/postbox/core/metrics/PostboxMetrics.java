package dev.postbox.core.metrics;

import java.time.Duration;
import java.util.function.DoubleSupplier;

/**
 * Where Postbox reports its metrics: counters, gauges read on demand, and timers (histograms of
 * durations). Every metric Postbox reports is one of {@link MetricName}, with the tags that name
 * documents. Core has no metrics library; {@code postbox-micrometer} adapts this interface to
 * Micrometer ({@code MicrometerPostboxMetrics.of(registry)}).
 *
 * <p>Postbox asks for each counter and timer once per tag set and keeps it, so implementations may
 * do the lookup work in {@link #counter} and {@link #timer}; the returned instruments are called on
 * hot paths and must be cheap. A gauge is registered once and its supplier is called whenever the
 * metric is read, from the reader's thread. Implementations must be thread-safe.
 *
 * <p>Default everywhere: {@link #noop()}, which records nothing and costs a virtual call.
 */
public interface PostboxMetrics {

  /** The counter {@code name} with {@code tags}. */
  Counter counter(MetricName name, Tags tags);

  /** The timer (a histogram of durations) {@code name} with {@code tags}. */
  Timer timer(MetricName name, Tags tags);

  /**
   * Registers the gauge {@code name} with {@code tags}, read from {@code value} whenever the metric
   * is read. Registering the same name and tags again replaces nothing: the first registration
   * stays (implementations may keep a weak reference to the supplier's owner; Postbox keeps its
   * suppliers reachable while its component runs).
   */
  void gauge(MetricName name, Tags tags, DoubleSupplier value);

  /** Metrics that record nothing. */
  static PostboxMetrics noop() {
    return Noop.INSTANCE;
  }

  /** A monotonic counter. Thread-safe. */
  @FunctionalInterface
  interface Counter {
    /** Adds {@code n} (not negative). */
    void increment(long n);

    /** Adds one. */
    default void increment() {
      increment(1);
    }
  }

  /** Records durations into a histogram. Thread-safe. */
  @FunctionalInterface
  interface Timer {
    /** Records one duration (negative durations are recorded as zero). */
    void record(Duration duration);
  }
}
