package dev.postbox.admin;

import dev.postbox.jdbc.ReplayRoute;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * A bulk replay of dead letters worked in the background ({@link ReplayJobRunner}), its state and
 * progress as stored in {@code postbox_replay_job} (migration V20).
 *
 * @param id the job
 * @param state where it is
 * @param createdAt when it was started
 * @param createdBy who started it (the actor of each letter's replay and audit row)
 * @param reason why, as the operator gave it
 * @param selection what it selected, as text
 * @param route to whom each letter is replayed
 * @param total letters it covers (fixed at its start)
 * @param replayed letters written to the outbox again
 * @param skipped letters left as they were (replayed or discarded meanwhile by someone else,
 *     purged, or replayed too often already; also the one letter a runner replayed just before it
 *     stopped without recording it, which the runner taking over finds replayed)
 * @param failed letters that could not be replayed (they stay PENDING)
 * @param processed replayed + skipped + failed
 * @param startedAt when a runner first worked it
 * @param progressAt when a letter was last worked
 * @param finishedAt when it ended (DONE or CANCELLED)
 * @param changedBy who last paused, resumed or cancelled it
 * @param owner the runner working it while its lease holds
 * @param ratePerSecond letters per second from its start by a runner to its latest letter (pauses
 *     included), once one was worked
 */
public record ReplayJob(
    long id,
    State state,
    Instant createdAt,
    String createdBy,
    String reason,
    String selection,
    ReplayRoute route,
    int total,
    int replayed,
    int skipped,
    int failed,
    int processed,
    Optional<Instant> startedAt,
    Optional<Instant> progressAt,
    Optional<Instant> finishedAt,
    Optional<String> changedBy,
    Optional<String> owner,
    Optional<Double> ratePerSecond) {

  /** A job's states. */
  public enum State {
    /** A runner works it (or the next one to claim it will). */
    RUNNING,
    /** Stopped by an operator until resumed. */
    PAUSED,
    /** Stopped for good by an operator; the letters not yet worked stay as they are. */
    CANCELLED,
    /** Every letter worked. */
    DONE
  }

  /** Whether the job has ended (DONE or CANCELLED). */
  public boolean ended() {
    return state == State.DONE || state == State.CANCELLED;
  }

  /** The progress as a whole percentage (100 for an empty job). */
  public int percent() {
    return total == 0 ? 100 : (int) (100L * processed / total);
  }

  /** Letters per second: {@code processed} between {@code from} and {@code to}, when measurable. */
  public static Optional<Double> rate(int processed, Optional<Instant> from, Optional<Instant> to) {
    if (processed < 1 || from.isEmpty() || to.isEmpty()) {
      return Optional.empty();
    }
    long nanos = Duration.between(from.get(), to.get()).toNanos();
    return nanos <= 0 ? Optional.empty() : Optional.of(processed * 1e9 / nanos);
  }
}
