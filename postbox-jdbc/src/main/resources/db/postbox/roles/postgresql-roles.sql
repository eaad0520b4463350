-- Postbox on PostgreSQL with least privilege: one role per component, each allowed what that component does and
-- nothing else. Not a Flyway migration (roles belong to the cluster, not to one schema): an administrator runs it
-- in the schema Postbox lives in (first on search_path, as for the migrations), AFTER the migrations, and again
-- after every upgrade that adds a table. Idempotent. Needs a role that may create roles (CREATEROLE) and owns or
-- may grant on the schema and its postbox_* tables (the migration owner, or a superuser).
--
-- The roles are group roles (NOLOGIN). Give each process its own login role and make it a member, for example:
--   CREATE ROLE orders_relay LOGIN PASSWORD '...' IN ROLE postbox_relay;
--
--   postbox_owner     runs PostboxMigrations (creates and alters the postbox_* tables; owns them)
--   postbox_app       the application writer: its business tables (granted by you) + outbox INSERT
--   postbox_relay     the relay (polling): the outbox and the relay's lease tables only; no business table, no
--                     inbox, no dead letter
--   postbox_consumer  a subscriber: inbox, entity versions, parking, dead-letter INSERT (it cannot read dead
--                     letters back: their payloads are for operators), outbox INSERT (handlers that publish);
--                     its business tables are granted by you
--   postbox_operator  dead letters (read, replay, discard, purge), replay audit, parked keys, unpublishable outbox
--                     rows (retry/skip), the consumers' reported ages (read); no business table, no inbox
--
-- Every role that inserts into postbox_outbox fires its trigger, which reads postbox_relay_instance.idle: those
-- roles get SELECT on that one column. Business tables are yours: grant them to postbox_app and postbox_consumer
-- only (never to postbox_relay or postbox_operator), e.g. GRANT SELECT, INSERT, UPDATE ON orders TO postbox_app.
-- RolesIT (postbox-jdbc) runs each component under its role and checks that a forbidden access fails.

DO $roles$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['postbox_owner', 'postbox_app', 'postbox_relay', 'postbox_consumer',
                             'postbox_operator'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        END IF;
    END LOOP;
    EXECUTE format('GRANT USAGE, CREATE ON SCHEMA %I TO postbox_owner', current_schema());
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO postbox_app, postbox_relay, postbox_consumer, postbox_operator',
                   current_schema());
END
$roles$;

-- The migration owner owns every postbox_* table (with its identity sequence) and function (so it can alter them in later
-- migrations) and the migration history.
DO $owner$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT c.relname, c.relkind FROM pg_class c
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'postbox\_%'
               AND c.relkind IN ('r', 'p', 'v') LOOP
        EXECUTE format('ALTER %s %I OWNER TO postbox_owner',
                       CASE t.relkind WHEN 'v' THEN 'VIEW' ELSE 'TABLE' END, t.relname);
    END LOOP;
    FOR t IN SELECT p.oid::regprocedure AS f FROM pg_proc p
             WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'postbox\_%' LOOP
        EXECUTE format('ALTER FUNCTION %s OWNER TO postbox_owner', t.f);
    END LOOP;
END
$owner$;

-- Start from nothing, so that a rerun after a change of this script takes privileges away too.
REVOKE ALL ON postbox_outbox, postbox_relay_lane, postbox_relay_instance, postbox_outbox_resolution,
              postbox_inbox, postbox_entity_version, postbox_dead_letter, postbox_replay_audit, postbox_parked,
              postbox_consumer_offset, postbox_dead_letter_group, postbox_cdc_slot, postbox_shard_member,
              postbox_shard_lease, postbox_replay_job, postbox_replay_job_letter, postbox_consumer_age
    FROM postbox_app, postbox_relay, postbox_consumer, postbox_operator;
REVOKE ALL ON postbox_schema_history FROM postbox_app, postbox_relay, postbox_consumer, postbox_operator;

-- Writers of the outbox: the application, handlers that publish, the operator's replay. The position column is
-- an identity: no sequence grant is needed for INSERT.
GRANT INSERT ON postbox_outbox TO postbox_app, postbox_consumer, postbox_operator;
GRANT SELECT (idle) ON postbox_relay_instance TO postbox_app, postbox_consumer, postbox_operator;

-- The relay: claims, marks, holds and purges outbox rows; leases lanes; heartbeats.
GRANT SELECT, UPDATE, DELETE ON postbox_outbox TO postbox_relay;
GRANT SELECT, INSERT, UPDATE, DELETE ON postbox_relay_lane, postbox_relay_instance TO postbox_relay;
-- The CDC relay (V13) leases its slot in postbox_cdc_slot; its login role also needs REPLICATION (docs/relay.md).
GRANT SELECT, INSERT, UPDATE, DELETE ON postbox_cdc_slot TO postbox_relay;

-- The consumer: inbox rows (inserted with the effect, read for the payload fingerprint, purged), entity versions,
-- parked sequences, dead letters written (the replay count of an earlier letter of the same message is read, and
-- the new id returned: those columns only).
-- UPDATE: a handler's stored result (V10) is written on the row its transaction just inserted.
GRANT SELECT, INSERT, UPDATE, DELETE ON postbox_inbox TO postbox_consumer;
-- Offsets in PostgreSQL (V11): each partition's next offset, written with the effect.
GRANT SELECT, INSERT, UPDATE ON postbox_consumer_offset TO postbox_consumer;
-- The dead-letter groups (V12) are counted by triggers on postbox_dead_letter, which run as the writer.
GRANT SELECT, INSERT, UPDATE ON postbox_dead_letter_group TO postbox_consumer, postbox_operator;
GRANT SELECT, INSERT, UPDATE ON postbox_entity_version TO postbox_consumer;
GRANT SELECT, INSERT, UPDATE, DELETE ON postbox_parked TO postbox_consumer;
GRANT INSERT ON postbox_dead_letter TO postbox_consumer;
GRANT SELECT (id, consumer, message_id, replays) ON postbox_dead_letter TO postbox_consumer;
-- Shard leases (V19): the instances of a subscription heartbeat and share its shards.
GRANT SELECT, INSERT, UPDATE, DELETE ON postbox_shard_member, postbox_shard_lease TO postbox_consumer;
-- Consumer ages (V21): each instance reports the oldest unfinished message of the queues it consumes, replaces
-- and prunes its reports; the operator's command line and console read them (lag as age).
GRANT SELECT, INSERT, UPDATE, DELETE ON postbox_consumer_age TO postbox_consumer;
GRANT SELECT ON postbox_consumer_age TO postbox_operator;

-- The operator: dead letters and their replay (written to the outbox again, an earlier unpublished copy of the
-- same id replaced), the audit of replays, parked keys, unpublishable rows retried or skipped.
GRANT SELECT, UPDATE, DELETE ON postbox_dead_letter TO postbox_operator;
GRANT SELECT, INSERT ON postbox_replay_audit TO postbox_operator;
-- Replay jobs (V20): created, claimed (SELECT ... FOR UPDATE SKIP LOCKED), advanced and ended by the operator's
-- console or CLI; never deleted.
GRANT SELECT, INSERT, UPDATE ON postbox_replay_job, postbox_replay_job_letter TO postbox_operator;
GRANT SELECT, UPDATE, DELETE ON postbox_parked TO postbox_operator;
GRANT SELECT, UPDATE, DELETE ON postbox_outbox TO postbox_operator;
GRANT SELECT, INSERT ON postbox_outbox_resolution TO postbox_operator;
