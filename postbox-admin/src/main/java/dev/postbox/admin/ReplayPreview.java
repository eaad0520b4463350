package dev.postbox.admin;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * What a bulk replay of a {@link ReplaySelection} would cover, before it starts: the PENDING
 * letters it selects now.
 *
 * @param selection the selection, as text
 * @param count how many PENDING letters it selects
 * @param topics their origin topics, sorted
 * @param consumers the consumers that gave up on them, sorted
 * @param oldest the earliest first failure among them
 * @param newest the latest first failure among them
 * @param sample a few of them, oldest first
 * @param confirmationNeeded whether starting the job needs the typed confirmation (more letters
 *     than {@link PostboxAdmin.Builder#replayJobConfirmAbove(int)})
 * @param confirmation what to type to confirm: the count
 */
public record ReplayPreview(
    String selection,
    long count,
    List<String> topics,
    List<String> consumers,
    Optional<Instant> oldest,
    Optional<Instant> newest,
    List<DeadLetterSummary> sample,
    boolean confirmationNeeded,
    String confirmation) {

  public ReplayPreview {
    topics = List.copyOf(topics);
    consumers = List.copyOf(consumers);
    sample = List.copyOf(sample);
  }
}
