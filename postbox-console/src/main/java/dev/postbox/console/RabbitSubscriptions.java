package dev.postbox.console;

import dev.postbox.rabbitmq.RabbitLagProbe;
import dev.postbox.rabbitmq.RabbitTopology;
import java.util.ArrayList;
import java.util.List;

/**
 * The subscriptions of {@code postbox.console.rabbitmq.subscriptions}, each entry {@code
 * subscription:shards:topic} (the topic is the rest of the entry, so it may hold a colon), parsed
 * and checked at start with a message naming the setting.
 */
record RabbitSubscriptions(List<Entry> entries) {

  static final String SETTING = "postbox.console.rabbitmq.subscriptions";

  /** One watched topic of a subscription, with its shard queues' count. */
  record Entry(String subscription, int shards, String topic) {}

  RabbitSubscriptions {
    entries = List.copyOf(entries);
  }

  /**
   * Parses {@code values}.
   *
   * @throws IllegalStateException naming the setting and the entry if one is not {@code
   *     subscription:shards:topic} with shards between 1 and {@link RabbitTopology#SLOTS}
   */
  static RabbitSubscriptions parse(List<String> values) {
    List<Entry> out = new ArrayList<>();
    for (String value : values) {
      String v = value == null ? "" : value.strip();
      String[] parts = v.split(":", 3);
      if (parts.length != 3 || parts[0].isBlank() || parts[2].isBlank()) {
        throw new IllegalStateException(
            SETTING
                + ": '"
                + v
                + "' is not subscription:shards:topic (for example shipping:4:orders)");
      }
      int shards;
      try {
        shards = Integer.parseInt(parts[1].strip());
      } catch (NumberFormatException e) {
        shards = 0;
      }
      if (shards < 1 || shards > RabbitTopology.SLOTS) {
        throw new IllegalStateException(
            SETTING
                + ": '"
                + v
                + "': the shards must be a number between 1 and "
                + RabbitTopology.SLOTS
                + " (the subscriber's shards, default "
                + RabbitTopology.DEFAULT_SHARDS
                + ")");
      }
      out.add(new Entry(parts[0].strip(), shards, parts[2].strip()));
    }
    return new RabbitSubscriptions(out);
  }

  /** Adds every entry to {@code probe}. */
  RabbitLagProbe.Builder watchedBy(RabbitLagProbe.Builder probe) {
    entries.forEach(e -> probe.subscription(e.subscription(), e.shards(), e.topic()));
    return probe;
  }
}
