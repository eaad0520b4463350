package dev.postbox.admin;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One page of items and the cursor of the next one (empty on the last page). Cursors are opaque
 * text, stable across inserts (keyset paging: a page never repeats or skips an item because rows
 * were added meanwhile).
 */
public record Page<T>(List<T> items, Optional<String> next) {

  public Page {
    items = List.copyOf(items);
    Objects.requireNonNull(next, "next");
  }
}
