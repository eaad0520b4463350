-- Postbox consumer offsets, version 11: the offsets-in-PostgreSQL delivery mode (EFFECTIVELY_ONCE with an
-- OffsetStore instead of an inbox). Like the others, created in the current schema (search_path).

-- One row per (consumer group, topic, partition): the next offset to apply. A consumer whose handler reads a
-- partition in order locks the row, skips a record below next_offset (applied before, by any instance), and
-- otherwise applies the effect and stores offset + 1 in the SAME transaction. On every assignment it seeks
-- the partition to next_offset, so Kafka's committed offsets are never needed for correctness (they are still
-- committed, for lag). State is O(partitions): nothing to purge.
CREATE TABLE postbox_consumer_offset (
    consumer_group text        NOT NULL,
    topic          text        NOT NULL,
    partition      integer     NOT NULL,
    next_offset    bigint      NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_group, topic, partition)
);
