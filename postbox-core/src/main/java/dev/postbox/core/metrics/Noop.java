package dev.postbox.core.metrics;

import java.util.function.DoubleSupplier;

/** The metrics that record nothing: shared instruments, no state. */
final class Noop implements PostboxMetrics {

  static final Noop INSTANCE = new Noop();

  private static final Counter COUNTER = n -> {};
  private static final Timer TIMER = d -> {};

  private Noop() {}

  @Override
  public Counter counter(MetricName name, Tags tags) {
    return COUNTER;
  }

  @Override
  public Timer timer(MetricName name, Tags tags) {
    return TIMER;
  }

  @Override
  public void gauge(MetricName name, Tags tags, DoubleSupplier value) {}

  @Override
  public String toString() {
    return "PostboxMetrics.noop()";
  }
}
