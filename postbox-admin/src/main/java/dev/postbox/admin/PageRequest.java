package dev.postbox.admin;

import java.util.Objects;
import java.util.Optional;

/**
 * One page of a list: at most {@code limit} items after the cursor of the previous page ({@link
 * Page#next()}), or from the start.
 *
 * @param limit 1 to {@value #MAX_LIMIT}
 * @param after the previous page's {@link Page#next()} cursor; empty for the first page
 */
public record PageRequest(int limit, Optional<String> after) {

  /** The most items one page holds. */
  public static final int MAX_LIMIT = 1000;

  /** Items per page when a front end does not say. */
  public static final int DEFAULT_LIMIT = 50;

  public PageRequest {
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new IllegalArgumentException("limit must be between 1 and " + MAX_LIMIT + ": " + limit);
    }
    Objects.requireNonNull(after, "after");
  }

  /** The first page of {@code limit} items. */
  public static PageRequest first(int limit) {
    return new PageRequest(limit, Optional.empty());
  }

  /** The page after {@code cursor}. */
  public static PageRequest after(String cursor, int limit) {
    return new PageRequest(limit, Optional.of(cursor));
  }
}
