package dev.postbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.core.time.FakeTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.random.RandomGenerator;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/** The retry-topic hand-off's send: its backoff schedule, on fake time (no broker, no sleeping). */
class AckedSendTest {

  private final FakeTime time = FakeTime.create();
  private final ProducerRecord<byte[], byte[]> record =
      new ProducerRecord<>("orders.retry.1", new byte[] {1}, new byte[] {2});

  /** Kafka's in-memory producer whose first {@code failures} sends fail. */
  private static final class FlakyProducer extends MockProducer<byte[], byte[]> {
    final AtomicInteger failuresLeft;

    FlakyProducer(int failures) {
      super(true, null, new ByteArraySerializer(), new ByteArraySerializer());
      this.failuresLeft = new AtomicInteger(failures);
    }

    @Override
    public synchronized Future<RecordMetadata> send(
        ProducerRecord<byte[], byte[]> r, Callback callback) {
      if (failuresLeft.getAndDecrement() > 0) {
        throw new TimeoutException("broker unreachable");
      }
      return super.send(r, callback);
    }
  }

  private static List<Duration> millis(long... ms) {
    List<Duration> out = new ArrayList<>();
    for (long m : ms) {
      out.add(Duration.ofMillis(m));
    }
    return out;
  }

  @Test
  void retriesDoubleFrom200MsUpTo5s() {
    FlakyProducer producer = new FlakyProducer(8);
    assertThat(new AckedSend(producer, "inventory", time).send(record, "orders-0@7", () -> true))
        .isTrue();
    assertThat(producer.history()).hasSize(1);
    assertThat(time.sleeps()).isEqualTo(millis(200, 400, 800, 1600, 3200, 5000, 5000, 5000));
  }

  @Test
  void theScheduleIsTheOneTheHandRolledShiftGave() {
    RandomGenerator random = RandomGenerator.getDefault();
    for (int i = 1; i <= 20; i++) {
      assertThat(AckedSend.BACKOFF.delay(i, random))
          .as("attempt %d", i)
          .isEqualTo(Duration.ofMillis(Math.min(5_000, 100L << Math.min(i, 6))));
    }
  }

  @Test
  void aFirstSendThatIsAckedNeverWaits() {
    assertThat(new AckedSend(new FlakyProducer(0), "inventory", time).send(record, "o", () -> true))
        .isTrue();
    assertThat(time.sleeps()).isEmpty();
  }

  @Test
  void givesUpOnceThePartitionIsNoLongerOwned() {
    FlakyProducer producer = new FlakyProducer(100);
    AtomicInteger checks = new AtomicInteger();
    boolean sent =
        new AckedSend(producer, "inventory", time)
            .send(record, "orders-0@7", () -> checks.incrementAndGet() < 3);
    assertThat(sent).isFalse();
    assertThat(time.sleeps()).isEqualTo(millis(200, 400));
    assertThat(producer.history()).isEmpty();
  }
}
