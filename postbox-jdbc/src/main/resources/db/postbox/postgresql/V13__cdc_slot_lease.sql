-- Postbox outbox, version 13: the CDC relay's slot lease. One row per replication slot a CdcRelay streams.
--
-- owner/epoch/lease_until: the one instance allowed to stream the slot, publish what it streams, mark it and confirm
--   it. A standby takes the lease once lease_until has passed (the owner crashed, or was paused past its lease),
--   bumping the epoch; the ex-owner's marks are fenced by the epoch, its confirmations by PostgreSQL (the successor
--   ends the ex-owner's walsender before it streams).
-- behind_since: the commit time of the oldest transaction the owner streamed and has not confirmed yet, or the time
--   of the owner's last renewal when it had none (written at each renewal). OperationsProbe reads the slot's lag as
--   age from it: it keeps growing while no relay runs.
-- republish_from_table: set when the slot was lost (dropped, or invalidated by max_slot_wal_keep_size) and created
--   again; the next owner publishes the table's pending rows, in position order, before it streams the new slot,
--   then clears it. Kept here so that a crash during that recovery resumes it.
CREATE TABLE postbox_cdc_slot (
    slot_name            text        PRIMARY KEY,
    owner                text,
    epoch                bigint      NOT NULL DEFAULT 0,
    lease_until          timestamptz NOT NULL DEFAULT '-infinity',
    behind_since         timestamptz,
    republish_from_table boolean     NOT NULL DEFAULT false,
    slot_recreated_at    timestamptz,
    slot_recoveries      bigint      NOT NULL DEFAULT 0
);
