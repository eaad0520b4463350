package dev.postbox.bench;

import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * One figure of a benchmark run: its value, and optionally the baseline measured side by side in
 * the same run, the target and a note. The ratio is {@code value / baseline}; a target applies to
 * the ratio when there is a baseline, to the value otherwise. Immutable and thread-safe.
 *
 * @param name the stable key in the JSON report (for example {@code relay_1_instance_events_per_s})
 * @param value the measured value
 * @param unit its unit ({@code events/s}, {@code ms}, {@code MB}, {@code x} for ratios)
 * @param baseline the baseline's value, if this figure is compared with one
 * @param baselineName the baseline's measurement name (present exactly when baseline is)
 * @param target the target, if the issue sets one
 * @param note how it was measured, or why a target was missed (may be empty)
 */
public record Measurement(
    String name,
    double value,
    String unit,
    OptionalDouble baseline,
    Optional<String> baselineName,
    Optional<Target> target,
    String note) {

  public Measurement {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(unit, "unit");
    Objects.requireNonNull(baseline, "baseline");
    Objects.requireNonNull(baselineName, "baselineName");
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(note, "note");
    if (name.isBlank()) {
      throw new IllegalArgumentException("name must not be blank");
    }
    if (baseline.isPresent() != baselineName.isPresent()) {
      throw new IllegalArgumentException("baseline and baselineName go together: " + name);
    }
  }

  /** A figure without baseline, target or note. */
  public static Measurement of(String name, double value, String unit) {
    return new Measurement(
        name, value, unit, OptionalDouble.empty(), Optional.empty(), Optional.empty(), "");
  }

  /** This figure compared with {@code baseline} (measured in the same run). */
  public Measurement against(Measurement baseline) {
    return new Measurement(
        name,
        value,
        unit,
        OptionalDouble.of(baseline.value()),
        Optional.of(baseline.name()),
        target,
        note);
  }

  /** This figure with a target. */
  public Measurement target(Target t) {
    return new Measurement(name, value, unit, baseline, baselineName, Optional.of(t), note);
  }

  /** This figure with a note. */
  public Measurement note(String text) {
    return new Measurement(name, value, unit, baseline, baselineName, target, text);
  }

  /** {@code value / baseline}, if there is a baseline and it is not zero. */
  public OptionalDouble ratio() {
    if (baseline.isEmpty() || baseline.getAsDouble() == 0) {
      return OptionalDouble.empty();
    }
    return OptionalDouble.of(value / baseline.getAsDouble());
  }

  /** Whether the target is met; empty without a target (or without the ratio it needs). */
  public Optional<Boolean> met() {
    if (target.isEmpty()) {
      return Optional.empty();
    }
    if (baseline.isPresent()) {
      OptionalDouble r = ratio();
      return r.isPresent() ? Optional.of(target.get().isMetBy(r.getAsDouble())) : Optional.empty();
    }
    return Optional.of(target.get().isMetBy(value));
  }

  /** A number for humans: thousands separated above 100, two decimals below. */
  static String format(double x) {
    if (Math.abs(x) >= 100) {
      return String.format(Locale.ROOT, "%,.0f", x);
    }
    return String.format(Locale.ROOT, "%.2f", x);
  }
}
