-- Postbox ordered parking, version 4.
-- A key whose message keeps failing is parked: that message and every later message of the same key wait here, in
-- order (id), and are retried as a sequence while other keys flow on. Only the head (lowest id) of a key carries a
-- meaningful due time and lease; the rest wait behind it.
CREATE TABLE postbox_parked (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    consumer        text        NOT NULL,
    msg_key         text        NOT NULL,
    topic           text        NOT NULL,
    partition       integer     NOT NULL,
    "offset"        bigint      NOT NULL,
    key_bytes       bytea,
    value           bytea,
    header_names    text[]      NOT NULL,
    header_values   bytea[]     NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    due_at          timestamptz NOT NULL,
    leased_until    timestamptz,
    last_error      text,
    parked_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT postbox_parked_headers CHECK (cardinality(header_names) = cardinality(header_values))
);

-- A key's sequence in order; also answers "is this key parked?".
CREATE INDEX postbox_parked_key ON postbox_parked (consumer, msg_key, id);

-- Due heads.
CREATE INDEX postbox_parked_due ON postbox_parked (consumer, due_at);
