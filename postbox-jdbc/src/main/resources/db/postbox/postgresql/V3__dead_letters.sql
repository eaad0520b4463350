-- Postbox dead letters, version 3: messages a consumer gave up on, kept byte-identical with why they failed, and
-- an audit trail of what operators replayed or discarded.
-- Like versions 1 and 2, every object is created in the current schema (search_path).

-- One row per message a consumer gave up on. The record is kept exactly as read: key and value bytes (null when
-- absent), and the headers as two parallel arrays (names, values) so their order, duplicate names and null values
-- survive. A letter starts PENDING and ends REPLAYED (its message was written to the outbox again) or DISCARDED.
-- replays counts how often this message (consumer, message_id) was replayed, carried over from earlier letters of
-- the same message, so a message that keeps failing after replays cannot loop forever.
CREATE TABLE postbox_dead_letter (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    consumer        text        NOT NULL,
    topic           text        NOT NULL,
    partition       integer     NOT NULL,
    "offset"        bigint      NOT NULL,
    message_id      uuid,
    type            text,
    msg_key         bytea,
    value           bytea,
    header_names    text[]      NOT NULL DEFAULT '{}',
    header_values   bytea[]     NOT NULL DEFAULT '{}',
    classification  text        NOT NULL,
    error_class     text        NOT NULL,
    error_message   text,
    stack_trace     text,
    fingerprint     text        NOT NULL,
    attempts        integer     NOT NULL,
    first_failure   timestamptz NOT NULL,
    last_failure    timestamptz NOT NULL,
    status          text        NOT NULL DEFAULT 'PENDING',
    replays         integer     NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    replayed_at     timestamptz,
    replayed_by     text,
    discarded_at    timestamptz,
    discarded_by    text,
    discard_reason  text,
    CONSTRAINT postbox_dead_letter_status CHECK (status IN ('PENDING', 'REPLAYED', 'DISCARDED')),
    CONSTRAINT postbox_dead_letter_classification
        CHECK (classification IN ('PERMANENT', 'RETRIES_EXHAUSTED', 'CONFLICT')),
    CONSTRAINT postbox_dead_letter_headers
        CHECK (cardinality(header_names) = cardinality(header_values))
);

-- Queries filter by consumer, topic, fingerprint or status and return the oldest first (first_failure, id).
CREATE INDEX postbox_dead_letter_consumer ON postbox_dead_letter (consumer, first_failure, id);
CREATE INDEX postbox_dead_letter_topic ON postbox_dead_letter (topic, first_failure, id);
CREATE INDEX postbox_dead_letter_fingerprint ON postbox_dead_letter (fingerprint, first_failure, id);
CREATE INDEX postbox_dead_letter_status ON postbox_dead_letter (status, first_failure, id);
CREATE INDEX postbox_dead_letter_first_failure ON postbox_dead_letter (first_failure, id);
-- Replaying one key of a consumer in order.
CREATE INDEX postbox_dead_letter_key ON postbox_dead_letter (consumer, msg_key, first_failure, id);
-- Carrying the replay count over to a new letter of the same message.
CREATE INDEX postbox_dead_letter_message ON postbox_dead_letter (consumer, message_id)
    WHERE message_id IS NOT NULL;
-- What retention deletes.
CREATE INDEX postbox_dead_letter_last_failure ON postbox_dead_letter (last_failure);

-- Who replayed or discarded what, when and why: one row per dead letter replayed or discarded.
CREATE TABLE postbox_replay_audit (
    id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    by_whom   text        NOT NULL,
    what      text        NOT NULL,
    how_many  integer     NOT NULL,
    action    text        NOT NULL,
    reason    text,
    CONSTRAINT postbox_replay_audit_action CHECK (action IN ('REPLAY', 'DISCARD'))
);

CREATE INDEX postbox_replay_audit_at ON postbox_replay_audit (at);
