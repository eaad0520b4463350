package dev.postbox.bench;

/**
 * A target of the benchmark issue: a bound on a measurement's ratio to its baseline (or on its
 * value when it has no baseline). Immutable and thread-safe.
 *
 * @param atLeast true for "at least {@code bound}", false for "at most {@code bound}"
 * @param bound the bound
 */
public record Target(boolean atLeast, double bound) {

  public Target {
    if (!Double.isFinite(bound)) {
      throw new IllegalArgumentException("bound must be finite, was " + bound);
    }
  }

  /** At least {@code bound}. */
  public static Target atLeast(double bound) {
    return new Target(true, bound);
  }

  /** At most {@code bound}. */
  public static Target atMost(double bound) {
    return new Target(false, bound);
  }

  /** Whether {@code x} meets this target. */
  public boolean isMetBy(double x) {
    return atLeast ? x >= bound : x <= bound;
  }

  @Override
  public String toString() {
    return (atLeast ? ">= " : "<= ") + Measurement.format(bound);
  }
}
