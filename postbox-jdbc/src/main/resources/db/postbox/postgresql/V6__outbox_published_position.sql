-- Postbox outbox, version 6: where each row was published. The relay's mark UPDATE (one statement per batch) also
-- records the broker's partition and offset of the acknowledged record, so a message can be traced by id
-- (MessageTracer) to the exact record on the topic. NULL for rows published before this version, rows not yet
-- published, and publishers that cannot tell. Adding nullable columns without a default rewrites nothing.
ALTER TABLE postbox_outbox ADD COLUMN published_partition integer;
ALTER TABLE postbox_outbox ADD COLUMN published_offset bigint;

-- Rows the relay gave up on (failed_at set) are few; OperationsProbe counts them for a gauge on every scrape, which
-- must not scan the outbox.
CREATE INDEX postbox_outbox_failed ON postbox_outbox (failed_at) WHERE failed_at IS NOT NULL;
