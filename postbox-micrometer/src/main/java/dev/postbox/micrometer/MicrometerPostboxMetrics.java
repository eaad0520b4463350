package dev.postbox.micrometer;

import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.Objects;
import java.util.function.DoubleSupplier;

/**
 * {@link PostboxMetrics} on a Micrometer {@link MeterRegistry}: counters become Micrometer
 * counters, gauges {@link Gauge}s (holding their supplier strongly, so a gauge lives as long as the
 * registry), timers Micrometer timers that publish a histogram (so Prometheus can compute quantiles
 * across instances) with service-level objectives at 10 ms, 100 ms, 1 s and 10 s. Names,
 * descriptions and base units come from {@link MetricName}.
 *
 * <pre>{@code
 * PostboxMetrics metrics = MicrometerPostboxMetrics.of(registry);
 * Relay relay = Relay.builder(store, publisher).metrics(metrics).build();
 * }</pre>
 *
 * <p>Thread-safe (as the registry is).
 */
public final class MicrometerPostboxMetrics implements PostboxMetrics {

  private static final Duration[] SLOS = {
    Duration.ofMillis(10), Duration.ofMillis(100), Duration.ofSeconds(1), Duration.ofSeconds(10)
  };

  private final MeterRegistry registry;

  private MicrometerPostboxMetrics(MeterRegistry registry) {
    this.registry = registry;
  }

  /** Metrics reported to {@code registry}. */
  public static MicrometerPostboxMetrics of(MeterRegistry registry) {
    return new MicrometerPostboxMetrics(Objects.requireNonNull(registry, "registry"));
  }

  /** The registry metrics go to. */
  public MeterRegistry registry() {
    return registry;
  }

  @Override
  public PostboxMetrics.Counter counter(MetricName name, dev.postbox.core.metrics.Tags tags) {
    require(name, MetricName.Kind.COUNTER);
    io.micrometer.core.instrument.Counter c =
        io.micrometer.core.instrument.Counter.builder(name.metricName())
            .description(name.description())
            .baseUnit(name.baseUnit())
            .tags(tags(tags))
            .register(registry);
    return c::increment;
  }

  @Override
  public PostboxMetrics.Timer timer(MetricName name, dev.postbox.core.metrics.Tags tags) {
    require(name, MetricName.Kind.TIMER);
    io.micrometer.core.instrument.Timer t =
        io.micrometer.core.instrument.Timer.builder(name.metricName())
            .description(name.description())
            .tags(tags(tags))
            .publishPercentileHistogram()
            .serviceLevelObjectives(SLOS)
            .register(registry);
    return d -> t.record(d.isNegative() ? Duration.ZERO : d);
  }

  @Override
  public void gauge(MetricName name, dev.postbox.core.metrics.Tags tags, DoubleSupplier value) {
    require(name, MetricName.Kind.GAUGE);
    Objects.requireNonNull(value, "value");
    Gauge.builder(name.metricName(), value, DoubleSupplier::getAsDouble)
        .description(name.description())
        .baseUnit(name.baseUnit())
        .tags(tags(tags))
        .strongReference(true)
        .register(registry);
  }

  private static void require(MetricName name, MetricName.Kind kind) {
    if (name.kind() != kind) {
      throw new IllegalArgumentException(name + " is a " + name.kind() + ", not a " + kind);
    }
  }

  private static io.micrometer.core.instrument.Tags tags(dev.postbox.core.metrics.Tags tags) {
    return io.micrometer.core.instrument.Tags.of(tags.asList().toArray(String[]::new));
  }

  @Override
  public String toString() {
    return "MicrometerPostboxMetrics[" + registry.getClass().getSimpleName() + "]";
  }
}
