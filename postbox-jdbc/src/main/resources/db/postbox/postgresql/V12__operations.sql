-- Postbox operations, version 12: what the operations API (postbox-admin) and ./postbox dlq|parked|outbox need.
--
-- 1. The tenant of a dead letter, as a column (filters and the list show it). It is read from the record's headers,
--    where every transport mapping puts it (Kafka's CloudEvents binding: ce_tenant; the AMQP binding:
--    cloudEvents_tenant, or cloudEvents:tenant), so the writers of dead letters stay as they are. A stored generated
--    column: it cannot disagree with the headers. Adding it rewrites postbox_dead_letter once (a table of failures,
--    normally small; run this migration when it is).
-- 2. The failure groups kept counted (postbox_dead_letter_group, by triggers), so the grouped list reads a few
--    hundred rows instead of aggregating every letter; and indexes for the filtered pages (keyset paging, newest
--    first) with 100,000 letters.
-- 3. The replay audit records every operator action, with structured columns a console can filter and link by.

-- The UTF-8 text of the first header (names compared case-insensitively) among `wanted`, else NULL. IMMUTABLE: it
-- reads only its arguments (convert_from with a fixed encoding), so it can compute a stored column.
CREATE FUNCTION postbox_header_text(names text[], vals bytea[], wanted text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT convert_from(vals[i], 'UTF8')
    FROM generate_subscripts(names, 1) AS i
    WHERE lower(names[i]) = ANY (wanted) AND vals[i] IS NOT NULL
    ORDER BY i LIMIT 1
$$;

ALTER TABLE postbox_dead_letter ADD COLUMN tenant text GENERATED ALWAYS AS (
    postbox_header_text(header_names, header_values,
        ARRAY['ce_tenant', 'cloudevents_tenant', 'cloudevents:tenant'])) STORED;

-- Letters per failure group, consumer and status, kept by the triggers below in the transaction that adds, moves
-- (replay, discard) or deletes (retention) a letter. Counts are exact; first_seen and last_seen span every letter the
-- row ever counted (a letter that left the status or was purged does not narrow them). The grouped list reads this
-- table (some hundred rows) unless it filters by type, key, tenant or time, which only the letters have. Concurrent
-- letters of one group and consumer serialise briefly on their row (dead-lettering is the rare path).
CREATE TABLE postbox_dead_letter_group (
    fingerprint text        NOT NULL,
    consumer    text        NOT NULL,
    status      text        NOT NULL,
    letters     bigint      NOT NULL,
    first_seen  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL,
    error_class text        NOT NULL,
    topic       text        NOT NULL,
    PRIMARY KEY (fingerprint, consumer, status)
);

INSERT INTO postbox_dead_letter_group
    SELECT fingerprint, consumer, status, count(*), min(first_failure), max(last_failure), min(error_class), min(topic)
    FROM postbox_dead_letter GROUP BY fingerprint, consumer, status;

CREATE FUNCTION postbox_dead_letter_group_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE postbox_dead_letter_group SET letters = letters - 1
            WHERE fingerprint = OLD.fingerprint AND consumer = OLD.consumer AND status = OLD.status;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO postbox_dead_letter_group AS g
                (fingerprint, consumer, status, letters, first_seen, last_seen, error_class, topic)
            VALUES (NEW.fingerprint, NEW.consumer, NEW.status, 1, NEW.first_failure, NEW.last_failure,
                NEW.error_class, NEW.topic)
            ON CONFLICT (fingerprint, consumer, status) DO UPDATE SET letters = g.letters + 1,
                first_seen = least(g.first_seen, EXCLUDED.first_seen),
                last_seen = greatest(g.last_seen, EXCLUDED.last_seen);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER postbox_dead_letter_group_count
    AFTER INSERT OR DELETE ON postbox_dead_letter
    FOR EACH ROW EXECUTE FUNCTION postbox_dead_letter_group_count();
CREATE TRIGGER postbox_dead_letter_group_move
    AFTER UPDATE ON postbox_dead_letter
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.fingerprint IS DISTINCT FROM NEW.fingerprint
        OR OLD.consumer IS DISTINCT FROM NEW.consumer)
    EXECUTE FUNCTION postbox_dead_letter_group_count();

-- Filters without an index before this version, each with the page order (first_failure, id).
CREATE INDEX postbox_dead_letter_type ON postbox_dead_letter (type, first_failure, id);
CREATE INDEX postbox_dead_letter_error_class ON postbox_dead_letter (error_class, first_failure, id);
CREATE INDEX postbox_dead_letter_tenant ON postbox_dead_letter (tenant, first_failure, id)
    WHERE tenant IS NOT NULL;
-- A key's letters across consumers (the key filter alone).
CREATE INDEX postbox_dead_letter_msg_key ON postbox_dead_letter (msg_key, first_failure, id);

-- Every operator action: replays and discards (as before), edits (a corrected copy), parked keys released or skipped,
-- blocked outbox rows retried or skipped. The new columns are NULL where they do not apply (and for rows written
-- before this version).
ALTER TABLE postbox_replay_audit DROP CONSTRAINT postbox_replay_audit_action;
ALTER TABLE postbox_replay_audit ADD CONSTRAINT postbox_replay_audit_action CHECK (action IN
    ('REPLAY', 'DISCARD', 'EDIT', 'RELEASE_PARKED', 'SKIP_PARKED', 'RETRY_BLOCKED', 'SKIP_BLOCKED'));
ALTER TABLE postbox_replay_audit ADD COLUMN dead_letter_id bigint;
ALTER TABLE postbox_replay_audit ADD COLUMN message_id uuid;
ALTER TABLE postbox_replay_audit ADD COLUMN new_message_id uuid;
ALTER TABLE postbox_replay_audit ADD COLUMN consumer text;
ALTER TABLE postbox_replay_audit ADD COLUMN msg_key text;
ALTER TABLE postbox_replay_audit ADD COLUMN outbox_position bigint;
CREATE INDEX postbox_replay_audit_by ON postbox_replay_audit (by_whom, id);
CREATE INDEX postbox_replay_audit_dead_letter ON postbox_replay_audit (dead_letter_id)
    WHERE dead_letter_id IS NOT NULL;
CREATE INDEX postbox_replay_audit_message ON postbox_replay_audit (message_id) WHERE message_id IS NOT NULL;
