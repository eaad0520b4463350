package dev.postbox.admin;

import java.util.Objects;
import java.util.Optional;

/**
 * Which dead letters a bulk replay covers: one letter ({@link #letter(long)}), or the PENDING
 * letters a filter matches ({@link #matching(DeadLetterFilter)}; a failure group is a filter by
 * fingerprint). Only PENDING letters are ever replayed: the filter's status is ignored.
 *
 * @param letterId one dead letter, or empty for the filter's letters
 * @param filter the letters' filter (ignored when a letter is named)
 */
public record ReplaySelection(Optional<Long> letterId, DeadLetterFilter filter) {

  public ReplaySelection {
    Objects.requireNonNull(letterId, "letterId");
    Objects.requireNonNull(filter, "filter");
  }

  /** One dead letter. */
  public static ReplaySelection letter(long id) {
    return new ReplaySelection(Optional.of(id), DeadLetterFilter.all());
  }

  /** The PENDING letters {@code filter} matches. */
  public static ReplaySelection matching(DeadLetterFilter filter) {
    return new ReplaySelection(Optional.empty(), filter);
  }

  /** What is selected, as a line of text (kept with the job and in its audit row). */
  public String describe() {
    if (letterId.isPresent()) {
      return "dead letter " + letterId.get();
    }
    StringBuilder b = new StringBuilder("pending letters");
    DeadLetterFilter f = filter;
    f.fingerprint().ifPresent(v -> b.append(" group=").append(v));
    f.consumer().ifPresent(v -> b.append(" consumer=").append(v));
    f.topic().ifPresent(v -> b.append(" topic=").append(v));
    f.type().ifPresent(v -> b.append(" type=").append(v));
    f.key().ifPresent(v -> b.append(" key=").append(v));
    f.tenant().ifPresent(v -> b.append(" tenant=").append(v));
    f.errorClass().ifPresent(v -> b.append(" error-class=").append(v));
    f.from().ifPresent(v -> b.append(" from=").append(v));
    f.to().ifPresent(v -> b.append(" to=").append(v));
    f.messageId().ifPresent(v -> b.append(" message-id=").append(v));
    return b.length() == "pending letters".length() ? "every pending letter" : b.toString();
  }
}
