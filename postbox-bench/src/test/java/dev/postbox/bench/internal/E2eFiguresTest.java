package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import dev.postbox.bench.internal.E2eFigures.Events;
import dev.postbox.bench.internal.E2eFigures.Latencies;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Per-event hops, percentiles, the tail's shares and the median, without infrastructure. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class E2eFiguresTest {

  @Test
  void anEventSplitsIntoAckPollAndApplyHopsThatAddUpToItsTotal() {
    // committed at 1,000.000 ms, stamped in ms 1,004 (read 1,004.5), polled at 1,006.5, effect
    // committed at 1,010.0
    Events e =
        new Events(
            new long[] {1_000_000},
            new long[] {1_004_500},
            new long[] {1_006_500},
            new long[] {1_010_000});

    Latencies l = E2eFigures.latencies(e);

    assertThat(l.totalMs()[0]).isCloseTo(10.0, within(1e-9));
    assertThat(l.ackMs()[0]).isCloseTo(4.5, within(1e-9));
    assertThat(l.pollMs()[0]).isCloseTo(2.0, within(1e-9));
    assertThat(l.applyMs()[0]).isCloseTo(3.5, within(1e-9));
  }

  @Test
  void anAcknowledgementReadAfterTheReceiptCountsAtItAndTheHopsStillAddUp() {
    // polled 0.2 ms after the stamp's millisecond began: before its midpoint (read at 1,001.5)
    Events e =
        new Events(
            new long[] {1_000_000},
            new long[] {1_001_500},
            new long[] {1_001_200},
            new long[] {1_002_000});

    Latencies l = E2eFigures.latencies(e);

    assertThat(l.pollMs()[0]).isZero();
    assertThat(l.ackMs()[0]).isCloseTo(1.2, within(1e-9));
    assertThat(l.applyMs()[0]).isCloseTo(0.8, within(1e-9));
    assertThat(l.totalMs()[0]).isCloseTo(2.0, within(1e-9));
  }

  @Test
  void withoutTheReceiptAnAcknowledgementReadAfterTheEffectCountsAtTheEffect() {
    // the relay read its batch's confirms 5 ms after the consumer's effect committed
    Events e =
        new Events(new long[] {1_000_000}, new long[] {1_015_000}, null, new long[] {1_010_000});

    Latencies l = E2eFigures.latencies(e);

    assertThat(l.ackMs()[0]).isCloseTo(10.0, within(1e-9));
    assertThat(E2eFigures.tailShares(l, 99)[0]).isCloseTo(100, within(1e-9));
  }

  @Test
  void withoutTheReceiptOnlyTheAckHopIsMeasuredAndItsShareIsOfTheTotal() {
    // confirmed 3 ms after the commit, effect 10 ms after it
    Events e =
        new Events(new long[] {1_000_000}, new long[] {1_003_000}, null, new long[] {1_010_000});

    Latencies l = E2eFigures.latencies(e);

    assertThat(l.totalMs()[0]).isCloseTo(10.0, within(1e-9));
    assertThat(l.ackMs()[0]).isCloseTo(3.0, within(1e-9));
    assertThat(l.has("poll")).isFalse();
    assertThat(l.has("apply")).isFalse();
    double[] shares = E2eFigures.tailShares(l, 99);
    assertThat(shares[0]).isCloseTo(30, within(1e-9));
    assertThat(shares[1]).isNaN();
    assertThat(shares[2]).isNaN();
  }

  @Test
  void eventsNeedTheirFourInstants() {
    assertThatThrownBy(() -> new Events(new long[1], new long[1], new long[0], new long[1]))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void percentilesAreNearestRankOverUnsortedValues() {
    double[] v = IntStream.rangeClosed(1, 1_000).map(i -> 1_001 - i).asDoubleStream().toArray();

    assertThat(E2eFigures.percentile(v, 50)).isEqualTo(500);
    assertThat(E2eFigures.percentile(v, 99)).isEqualTo(990);
    assertThat(E2eFigures.percentile(v, 99.9)).isEqualTo(999);
    assertThat(E2eFigures.percentile(new double[0], 99)).isZero();
    assertThat(v[0]).as("the input is left unsorted").isEqualTo(1_000);
  }

  @Test
  void theTailsSharesComeFromTheSlowestEventsOnlyAndAddUpToAHundred() {
    // 99 fast events all in apply, 1 slow one (the p99 and above) mostly in ack
    int n = 100;
    double[] total = new double[n];
    double[] ack = new double[n];
    double[] poll = new double[n];
    double[] apply = new double[n];
    for (int i = 0; i < n - 1; i++) {
      total[i] = 2;
      apply[i] = 2;
    }
    total[n - 1] = 100;
    ack[n - 1] = 80;
    poll[n - 1] = 5;
    apply[n - 1] = 15;
    Latencies l = new Latencies(total, ack, poll, apply);

    double[] shares = E2eFigures.tailShares(l, 99.5);

    assertThat(shares[0]).isCloseTo(80, within(1e-9));
    assertThat(shares[1]).isCloseTo(5, within(1e-9));
    assertThat(shares[2]).isCloseTo(15, within(1e-9));
  }

  @Test
  void noEventsGiveZeroShares() {
    Latencies none = new Latencies(new double[0], new double[0], new double[0], new double[0]);

    assertThat(E2eFigures.tailShares(none, 99)).containsExactly(0, 0, 0);
  }

  @Test
  void theMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
    assertThat(E2eFigures.median(new double[] {30, 10, 20})).isEqualTo(20);
    assertThat(E2eFigures.median(new double[] {40, 10, 20, 30})).isEqualTo(25);
    assertThat(E2eFigures.median(new double[0])).isNaN();
  }

  @Test
  void halfAndQuarterOfTheWritersMaximumAreRoundedToTenPerSecond() {
    assertThat(E2eFigures.halfMax(3_333)).isEqualTo(1_670);
    assertThat(E2eFigures.quarterMax(3_333)).isEqualTo(830);
    assertThat(E2eFigures.quarterMax(5)).isEqualTo(10);
  }
}
