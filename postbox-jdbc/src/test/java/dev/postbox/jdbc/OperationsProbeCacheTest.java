package dev.postbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.Message;
import dev.postbox.core.metrics.MetricName;
import dev.postbox.core.metrics.PostboxMetrics;
import dev.postbox.core.metrics.Tags;
import dev.postbox.core.time.FakeTime;
import dev.postbox.testkit.PostboxTest;
import dev.postbox.testkit.PostboxTestContext;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.function.DoubleSupplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The probe's gauges share one reading for the cache time, aged on the injected ticker: a row
 * written meanwhile shows only once the reading is older than the cache time. Fake time, no sleep.
 */
@PostboxTest
class OperationsProbeCacheTest {

  @Test
  void gaugesReuseOneReadingUntilItIsOlderThanTheCacheTime(PostboxTestContext ctx) {
    DataSource ds = ctx.dataSource();
    PostboxMigrations.migrate(ds);
    FakeTime time = FakeTime.create();
    Map<MetricName, DoubleSupplier> gauges = new EnumMap<>(MetricName.class);
    OperationsProbe.builder(ds)
        .cacheFor(Duration.ofSeconds(1))
        .ticker(time)
        .build()
        .bindTo(recording(gauges));
    DoubleSupplier pending = gauges.get(MetricName.OUTBOX_PENDING);
    assertThat(pending.getAsDouble()).isZero();

    Outbox.postgres()
        .inTransaction(
            ds,
            tx -> {
              tx.write(Message.builder("t", "x").key("k").jsonPayload("{}").build());
              return null;
            });
    assertThat(pending.getAsDouble()).as("the cached reading").isZero();
    time.advance(Duration.ofSeconds(1));
    assertThat(pending.getAsDouble()).as("exactly the cache time old: still reused").isZero();
    time.advance(Duration.ofNanos(1));
    assertThat(pending.getAsDouble()).as("older than the cache time: read again").isEqualTo(1);
  }

  private static PostboxMetrics recording(Map<MetricName, DoubleSupplier> gauges) {
    return new PostboxMetrics() {
      @Override
      public Counter counter(MetricName name, Tags tags) {
        return n -> {};
      }

      @Override
      public Timer timer(MetricName name, Tags tags) {
        return d -> {};
      }

      @Override
      public void gauge(MetricName name, Tags tags, DoubleSupplier value) {
        gauges.put(name, value);
      }
    };
  }
}
