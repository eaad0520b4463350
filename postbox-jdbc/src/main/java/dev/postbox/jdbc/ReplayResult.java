package dev.postbox.jdbc;

import java.util.List;

/**
 * What a {@link Replayer} call did, by dead-letter id, each list in the order the letters were
 * processed (oldest first).
 *
 * @param replayed letters whose message was written to the outbox and that are now {@code REPLAYED}
 * @param skipped letters left as they were: not {@code PENDING} (already replayed or discarded),
 *     replayed the maximum number of times already, or (for {@link Replayer#replayKey}) after an
 *     earlier letter of the key failed
 * @param failed letters that could not be replayed (the decoder threw, or the write failed); they
 *     stay {@code PENDING}
 */
public record ReplayResult(List<Long> replayed, List<Long> skipped, List<Long> failed) {

  public ReplayResult {
    replayed = List.copyOf(replayed);
    skipped = List.copyOf(skipped);
    failed = List.copyOf(failed);
  }

  /** Nothing replayed, skipped or failed. */
  public static ReplayResult empty() {
    return new ReplayResult(List.of(), List.of(), List.of());
  }

  /** Whether nothing failed. */
  public boolean succeeded() {
    return failed.isEmpty();
  }
}
