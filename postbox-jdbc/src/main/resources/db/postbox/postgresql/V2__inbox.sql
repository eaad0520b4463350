-- Postbox inbox, version 2: the consumer side of effectively-once delivery.
-- Like version 1, every object is created in the current schema (search_path).

-- One row per message a consumer has applied. A consumer (the stable name of one logical consumer, for example
-- a Kafka consumer group plus handler) inserts the row FIRST, in the same transaction as the message's effect,
-- and only then applies the effect on the same connection:
--   * the primary key makes a second delivery of the same id wait for the first delivery's transaction (even on
--     another instance) and then find the id taken, so exactly one effect commits;
--   * if the effect fails, the transaction rolls back and takes this row with it, so a retry can still apply
--     the message. Recording the id in a separate transaction, before or after the effect, would lose either the
--     effect or the dedupe on a crash in between.
-- processed_at is the start of the consumer's transaction (now()); it is only used to purge old records.
CREATE TABLE postbox_inbox (
    consumer     text        NOT NULL,
    message_id   uuid        NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);

-- What retention deletes: one consumer's records older than its retention. A record must outlive every possible
-- redelivery of its message (for Kafka, at least the topic's retention.ms): a message redelivered after its
-- record was purged is applied a second time.
CREATE INDEX postbox_inbox_processed ON postbox_inbox (consumer, processed_at);

-- The highest version applied per entity, for consumers of state events that may arrive out of order: the
-- consumer advances the version in the effect's transaction and skips the effect when the event is not newer,
-- so an older event never overwrites newer state. Advancing locks the row (INSERT ... ON CONFLICT DO UPDATE),
-- so concurrent consumers of one entity are serialised and the newest version wins.
CREATE TABLE postbox_entity_version (
    entity     text        PRIMARY KEY,
    version    bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
