package dev.postbox.bench.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class StallsTest {

  @Test
  void slowEventsCloseInCommitTimeAreOneWindow() {
    // commit times in µs (out of order, as a map hands them over) and latencies in ms
    long[] commits = {1_000_000, 0, 50_000, 120_000, 400_000, 450_000, 900_000};
    double[] latency = {5, 30, 40, 25, 2, 80, 90};
    // slow: 0 (30), 50 ms (40), 120 ms (25) -> one window (gaps of 50 and 70 ms); 450 ms (80) ->
    // a second (330 ms after); 900 ms (90) -> a third (450 ms after); the 1 s event is fast
    assertThat(Stalls.windows(commits, latency, 20)).isEqualTo(3);
    assertThat(Stalls.windows(commits, latency, 85)).isEqualTo(1);
    assertThat(Stalls.windows(commits, latency, 100)).isZero();
    assertThat(Stalls.windows(new long[0], new double[0], 20)).isZero();
  }

  @Test
  void aGapOfMoreThanTheWindowStartsANewOne() {
    long[] commits = {0, Stalls.GAP_MS * 1000, Stalls.GAP_MS * 2000 + 1};
    double[] latency = {50, 50, 50};
    assertThat(Stalls.windows(commits, latency, 20)).isEqualTo(2);
  }
}
