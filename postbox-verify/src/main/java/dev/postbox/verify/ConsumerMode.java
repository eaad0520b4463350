package dev.postbox.verify;

/**
 * How the campaign's consumer processes apply their records ({@code ./postbox verify
 * --consumer-mode}): the default {@code EFFECTIVELY_ONCE} inbox (a row per message), or the
 * offsets-in-PostgreSQL mode (each partition's next offset stored in the effect's transaction,
 * {@code postbox_consumer_offset}; partition order; sought on every assignment). The parking
 * scenario needs the inbox and is left out in the offsets mode. In the offsets mode a duplicate
 * effect is a second effect of one record position (what the mode promises once); an effect of a
 * copy the relay published again (same message id, another offset) is applied again by design and
 * only measured (fault log: {@code offsets-mode-duplicates}).
 */
enum ConsumerMode {
  INBOX,
  OFFSETS;

  /** The name on the command line, in the report and in the consumer's arguments. */
  String cliName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }

  static ConsumerMode parse(String s) {
    for (ConsumerMode m : values()) {
      if (m.cliName().equals(s)) {
        return m;
      }
    }
    throw new IllegalArgumentException("--consumer-mode must be inbox or offsets, was " + s);
  }
}
