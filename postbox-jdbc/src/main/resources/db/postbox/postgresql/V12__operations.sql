-- Postbox operations, version 12: what the operations API (postbox-admin) and ./postbox dlq|parked|outbox need.
--
-- 1. The tenant of a dead letter, as a column (filters and the list show it). It is read from the record's headers,
--    where every transport mapping puts it (Kafka's CloudEvents binding: ce_tenant; the AMQP binding:
--    cloudEvents_tenant, or cloudEvents:tenant), so the writers of dead letters stay as they are. A stored generated
--    column: it cannot disagree with the headers. Adding it rewrites postbox_dead_letter once (a table of failures,
--    normally small; run this migration when it is).
-- 2. Indexes for the grouped list and the filtered pages (keyset paging, newest first) with 100,000 letters.
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

-- The grouped list: one index-only scan of the letters of a status (or all), aggregated by fingerprint.
CREATE INDEX postbox_dead_letter_groups
    ON postbox_dead_letter (status, fingerprint, first_failure, last_failure) INCLUDE (consumer, error_class);
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
