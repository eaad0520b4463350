package dev.postbox.core.time;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Time that moves only when told: one source for a {@link Clock}, a {@link Ticker} and a {@link
 * Sleeper}, so that code waiting for a lease to expire or a backoff to pass can be tested without
 * sleeping. {@link #sleep(Duration)} never blocks: it advances the time by the duration and records
 * it, so a loop that sleeps between attempts runs through its schedule at once and a test can
 * assert the schedule with {@link #sleeps()}.
 *
 * <p>It lives in core (not in the test kit) because core's own engine tests need it and the test
 * kit depends on core; it has no dependencies and no effect unless a test wires it in. Thread-safe.
 */
public final class FakeTime implements Ticker, Sleeper {

  private final Instant origin;
  private long nanos;
  private final List<Duration> sleeps = new ArrayList<>();

  private FakeTime(Instant origin) {
    this.origin = origin;
  }

  /** Fake time starting at {@code origin} (the wall-clock reading of {@link #clock()}). */
  public static FakeTime startingAt(Instant origin) {
    return new FakeTime(Objects.requireNonNull(origin, "origin"));
  }

  /** Fake time starting at 2026-01-01T00:00:00Z. */
  public static FakeTime create() {
    return startingAt(Instant.parse("2026-01-01T00:00:00Z"));
  }

  @Override
  public synchronized long nanos() {
    return nanos;
  }

  /** Moves time forward by {@code duration}; a negative duration is refused. */
  public synchronized void advance(Duration duration) {
    if (duration.isNegative()) {
      throw new IllegalArgumentException("time only moves forward; got " + duration);
    }
    nanos += duration.toNanos();
  }

  /** Advances the time by {@code duration} at once and records the sleep; never blocks. */
  @Override
  public void sleep(Duration duration) throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted before a fake sleep of " + duration);
    }
    synchronized (this) {
      sleeps.add(duration);
      advance(duration);
    }
  }

  /** Every sleep so far, in order. */
  public synchronized List<Duration> sleeps() {
    return List.copyOf(sleeps);
  }

  /** The wall-clock time now: the origin plus the time advanced so far. */
  public synchronized Instant now() {
    return origin.plusNanos(nanos);
  }

  /** A UTC {@link Clock} reading this fake time. */
  public Clock clock() {
    return new FakeClock(ZoneOffset.UTC);
  }

  private final class FakeClock extends Clock {
    private final ZoneId zone;

    FakeClock(ZoneId zone) {
      this.zone = zone;
    }

    @Override
    public ZoneId getZone() {
      return zone;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return new FakeClock(zone);
    }

    @Override
    public Instant instant() {
      return now();
    }
  }
}
