-- Postbox outbox, version 9: an outbox row that cannot be published holds its key (or its topic) instead of being
-- skipped. Before this version such a row was marked failed and the later rows of its key went out without it; the
-- remedy (clearing failed_at) then published it after them, against per-key order.
--
-- hold: set together with failed_at when the relay gives up on a row under the BLOCK_KEY policy (the default):
--   'KEY'   the relay leaves out every later pending row of the same msg_key;
--   'TOPIC' also every pending row of the same topic (the topic is missing, refused by ACL or its name invalid).
-- An operator resolves the row (OutboxOperations): retry clears failed_at and hold, so the row is claimed again
-- first, then the rows it held, in order; skip clears hold only, so the row stays failed and the rest goes on.
-- Rows failed before this version (and under the SKIP policy) have no hold, as before.
ALTER TABLE postbox_outbox ADD COLUMN hold text;
-- NOT VALID: every existing row has no hold, so checking them would only scan the outbox under this migration's lock;
-- the check applies to every row written or updated from now on.
ALTER TABLE postbox_outbox ADD CONSTRAINT postbox_outbox_hold_kind
    CHECK (hold IS NULL OR (hold IN ('KEY', 'TOPIC') AND failed_at IS NOT NULL)) NOT VALID;

-- Every claim reads the holding rows first: few, so a small partial index.
CREATE INDEX postbox_outbox_holding ON postbox_outbox (position) WHERE hold IS NOT NULL;

-- Every retry and skip of an unpublishable row: who, when, why, and the error it had.
CREATE TABLE postbox_outbox_resolution (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    position    bigint      NOT NULL,
    message_id  uuid        NOT NULL,
    topic       text        NOT NULL,
    msg_key     text,
    action      text        NOT NULL CHECK (action IN ('RETRIED', 'SKIPPED')),
    error       text,
    reason      text,
    resolved_by text        NOT NULL,
    resolved_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX postbox_outbox_resolution_message ON postbox_outbox_resolution (message_id);
