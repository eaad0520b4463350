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
 *
 * <p>On RabbitMQ: the inbox with single active consumer per shard queue (the default, one instance
 * active on every shard), or {@code shard-leases}: the inbox with the shard queues shared among
 * three instances through leases in PostgreSQL ({@code postbox_shard_lease}), each active on its
 * own shards, handed over when an instance leaves, dies or freezes past its lease.
 */
enum ConsumerMode {
  INBOX,
  OFFSETS,
  SHARD_LEASES;

  /** The name on the command line, in the report and in the consumer's arguments. */
  String cliName() {
    return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
  }

  /** Whether the campaign on {@code transport} ({@code kafka} or {@code rabbitmq}) has it. */
  boolean runsOn(String transport) {
    return this == INBOX || (this == OFFSETS) == transport.equalsIgnoreCase("kafka");
  }

  static ConsumerMode parse(String s) {
    for (ConsumerMode m : values()) {
      if (m.cliName().equals(s)) {
        return m;
      }
    }
    throw new IllegalArgumentException(
        "--consumer-mode must be inbox, offsets (Kafka) or shard-leases (RabbitMQ), was " + s);
  }
}
