package dev.postbox.rabbitmq.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.AMQP;
import dev.postbox.core.time.FakeTime;
import dev.postbox.rabbitmq.RabbitTopology;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The oldest unfinished delivery's age per shard queue, on fake time, without a broker. */
class UnfinishedAgesTest {

  private static final Instant T0 = Instant.parse("2026-12-05T04:00:00Z");

  @Test
  void theOldestUnfinishedDeliveryCountsFromItsTimestampOrItsReceipt() {
    FakeTime time = FakeTime.startingAt(T0);
    UnfinishedAges ages = new UnfinishedAges("s", List.of("t"), 2, time.clock());
    String q0 = RabbitTopology.queue("s", "t", 0);
    UnfinishedAges.Queue q = ages.of(q0);
    assertThat(q.oldestAge()).isZero();
    Object stamped = q.received(stamped(T0.minusSeconds(20)));
    Object unstamped = q.received(new AMQP.BasicProperties());
    Object future = q.received(stamped(T0.plusSeconds(3_600)));
    time.advance(Duration.ofSeconds(5));
    assertThat(q.oldestAge()).isEqualTo(Duration.ofSeconds(25));
    q.done(stamped);
    assertThat(q.oldestAge())
        .as("received at T0; one from the future counts from receipt too")
        .isEqualTo(Duration.ofSeconds(5));
    q.done(unstamped);
    q.done(future);
    assertThat(q.oldestAge()).isZero();
    assertThat(ages.read(Set.of(0, 1))).containsOnlyKeys(q0, RabbitTopology.queue("s", "t", 1));
    assertThat(ages.read(Set.of(1))).containsOnlyKeys(RabbitTopology.queue("s", "t", 1));
  }

  @Test
  void twoDeliveriesWithTheSameTimestampAreTrackedApart() {
    FakeTime time = FakeTime.startingAt(T0);
    UnfinishedAges.Queue q = new UnfinishedAges("s", List.of("t"), 1, time.clock()).of("x");
    Object a = q.received(stamped(T0));
    q.received(stamped(T0));
    time.advance(Duration.ofSeconds(7));
    q.done(a);
    assertThat(q.oldestAge()).isEqualTo(Duration.ofSeconds(7));
  }

  private static AMQP.BasicProperties stamped(Instant t) {
    return new AMQP.BasicProperties.Builder().timestamp(Date.from(t)).build();
  }
}
