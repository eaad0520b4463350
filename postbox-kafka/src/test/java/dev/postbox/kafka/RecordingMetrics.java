package dev.postbox.kafka;

import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.DoubleSupplier;

/** Metrics kept in memory, for assertions: the SPI as a test sees it. */
final class RecordingMetrics implements PostboxMetrics {

  private record Key(MetricName name, Tags tags) {}

  private final Map<Key, AtomicLong> counters = new ConcurrentHashMap<>();
  private final Map<Key, List<Duration>> timers = new ConcurrentHashMap<>();
  private final Map<Key, DoubleSupplier> gauges = new ConcurrentHashMap<>();

  @Override
  public Counter counter(MetricName name, Tags tags) {
    AtomicLong c = counters.computeIfAbsent(new Key(name, tags), k -> new AtomicLong());
    return c::addAndGet;
  }

  @Override
  public Timer timer(MetricName name, Tags tags) {
    List<Duration> t =
        timers.computeIfAbsent(new Key(name, tags), k -> new CopyOnWriteArrayList<>());
    return t::add;
  }

  @Override
  public void gauge(MetricName name, Tags tags, DoubleSupplier value) {
    gauges.putIfAbsent(new Key(name, tags), value);
  }

  /** The sum of the counters {@code name} whose tags include {@code tags}. */
  long count(MetricName name, Tags tags) {
    return counters.entrySet().stream()
        .filter(e -> e.getKey().name() == name && includes(e.getKey().tags(), tags))
        .mapToLong(e -> e.getValue().get())
        .sum();
  }

  /** How many durations the timers {@code name} whose tags include {@code tags} recorded. */
  long recorded(MetricName name, Tags tags) {
    return timers.entrySet().stream()
        .filter(e -> e.getKey().name() == name && includes(e.getKey().tags(), tags))
        .mapToLong(e -> e.getValue().size())
        .sum();
  }

  /** The gauge {@code name} with exactly {@code tags}, read now; NaN when not registered. */
  double gauge(MetricName name, Tags tags) {
    DoubleSupplier s = gauges.get(new Key(name, tags));
    return s == null ? Double.NaN : s.getAsDouble();
  }

  private static boolean includes(Tags all, Tags some) {
    return all.asMap().entrySet().containsAll(some.asMap().entrySet());
  }
}
