-- Postbox outbox, version 7: wake relays only while one waits for work.
-- A NOTIFY serialises the commits of the transactions that send it (PostgreSQL queues notifications under one
-- database-wide lock held through commit), so one notification per insert capped outbox writers at about one
-- commit at a time (docs/benchmarks.md measured 0.14x the business-only rate with 8 clients). A relay that is
-- draining does not need them: it claims again as soon as a batch is done. Relays mark themselves idle after a
-- claim found nothing (then claim once more before waiting) and busy when a claim finds rows; the trigger notifies
-- only while some relay of this schema is idle. New and existing instance rows start idle, so relays of earlier
-- versions, which never mark themselves busy, keep being notified as before. A row inserted by a transaction that
-- was already running when a relay marked itself idle may not notify: that relay then finds it at the next poll
-- (pollInterval, 1 s by default) at the latest; nothing is lost.
ALTER TABLE postbox_relay_instance ADD COLUMN idle boolean NOT NULL DEFAULT true;

CREATE OR REPLACE FUNCTION postbox_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    waiting boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.postbox_relay_instance WHERE idle)', TG_TABLE_SCHEMA)
        INTO waiting;
    IF waiting THEN
        PERFORM pg_notify('postbox_outbox', TG_TABLE_SCHEMA);
    END IF;
    RETURN NULL;
END
$$;
