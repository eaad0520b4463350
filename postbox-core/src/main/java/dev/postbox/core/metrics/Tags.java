package dev.postbox.core.metrics;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The tags (labels) of one metric: name/value pairs in the order added, names unique. Postbox uses
 * {@code group}, {@code topic}, {@code partition}, {@code lane}, {@code consumer} and {@code
 * instance}. Immutable and thread-safe.
 */
public final class Tags {

  private static final Tags EMPTY = new Tags(Map.of());

  private final Map<String, String> tags;

  private Tags(Map<String, String> tags) {
    this.tags = tags;
  }

  /** No tags. */
  public static Tags empty() {
    return EMPTY;
  }

  /** Tags from alternating names and values: {@code Tags.of("group", "billing", "topic", "o")}. */
  public static Tags of(String... namesAndValues) {
    return EMPTY.and(namesAndValues);
  }

  /** These tags plus alternating names and values (a name added again replaces its value). */
  public Tags and(String... namesAndValues) {
    if (namesAndValues.length % 2 != 0) {
      throw new IllegalArgumentException("tags come in name/value pairs");
    }
    Map<String, String> m = new LinkedHashMap<>(tags);
    for (int i = 0; i < namesAndValues.length; i += 2) {
      String name = Objects.requireNonNull(namesAndValues[i], "tag name");
      if (name.isBlank()) {
        throw new IllegalArgumentException("tag names must not be blank");
      }
      m.put(name, Objects.requireNonNull(namesAndValues[i + 1], "value of tag " + name));
    }
    return new Tags(Collections.unmodifiableMap(m));
  }

  /** The tags as an ordered, unmodifiable map. */
  public Map<String, String> asMap() {
    return tags;
  }

  /** The tags as alternating names and values. */
  public List<String> asList() {
    List<String> out = new ArrayList<>(tags.size() * 2);
    tags.forEach((k, v) -> {
      out.add(k);
      out.add(v);
    });
    return out;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Tags t && t.tags.equals(tags);
  }

  @Override
  public int hashCode() {
    return tags.hashCode();
  }

  @Override
  public String toString() {
    return tags.toString();
  }
}
