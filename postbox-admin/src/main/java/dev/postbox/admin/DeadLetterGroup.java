package dev.postbox.admin;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The dead letters of one failure fingerprint (error class, normalised message, origin topic) among
 * those a filter matched.
 *
 * @param fingerprint the group
 * @param count letters in the group (matching the filter)
 * @param pending of them still PENDING
 * @param firstSeen earliest first failure
 * @param lastSeen latest last failure
 * @param consumers the consumers that gave up, sorted
 * @param errorClass the exception class
 * @param topic the origin topic of the newest letter
 * @param sampleError the error message of the newest letter
 * @param sampleId the newest letter's id (to show one)
 */
public record DeadLetterGroup(
    String fingerprint,
    long count,
    long pending,
    Instant firstSeen,
    Instant lastSeen,
    List<String> consumers,
    String errorClass,
    String topic,
    Optional<String> sampleError,
    long sampleId) {

  public DeadLetterGroup {
    consumers = List.copyOf(consumers);
  }
}
