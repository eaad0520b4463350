-- Postbox outbox, version 1.
-- Every object is created in the current schema (search_path), so one database can hold several Postbox
-- installations side by side. Apply through Flyway (PostboxMigrations.migrate) or by hand, in version order.

-- One row per message written by an application transaction. The relay publishes the rows of each lane in
-- position order; a row is marked published only after the broker acknowledged it.
CREATE TABLE postbox_outbox (
    position        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id      uuid        NOT NULL,
    topic           text        NOT NULL,
    msg_key         text,
    lane            smallint    NOT NULL,
    type            text        NOT NULL,
    schema_version  integer     NOT NULL,
    occurred_at     timestamptz NOT NULL,
    source          text        NOT NULL,
    correlation_id  text,
    causation_id    text,
    tenant          text,
    headers         jsonb,
    content_type    text        NOT NULL,
    payload         bytea       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    published_at    timestamptz,
    failed_at       timestamptz,
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text,
    CONSTRAINT postbox_outbox_lane_range CHECK (lane >= 0 AND lane < 64)
);

-- A message id is written once; writing it again is a bug in the caller and fails loudly.
CREATE UNIQUE INDEX postbox_outbox_message_id ON postbox_outbox (message_id);

-- What the relay claims: pending rows in position order (small: published and failed rows leave it).
CREATE INDEX postbox_outbox_pending ON postbox_outbox (position)
    WHERE published_at IS NULL AND failed_at IS NULL;

-- What retention deletes.
CREATE INDEX postbox_outbox_published ON postbox_outbox (published_at)
    WHERE published_at IS NOT NULL;

-- Relay ownership: 64 lanes (lane = hash(key) mod 64). Exactly one relay instance owns a lane at a time, under
-- a lease that expires; every acquisition increments the epoch, and claims and marks check (owner, epoch), so a
-- relay that lost its lease (paused, partitioned) can no longer change the outbox.
CREATE TABLE postbox_relay_lane (
    lane        smallint    PRIMARY KEY,
    owner       text,
    epoch       bigint      NOT NULL DEFAULT 0,
    lease_until timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO postbox_relay_lane (lane) SELECT generate_series(0, 63);

-- Live relay instances, for the fair share of lanes (ceil(64 / live instances)).
CREATE TABLE postbox_relay_instance (
    instance_id text        PRIMARY KEY,
    started_at  timestamptz NOT NULL DEFAULT now(),
    seen_at     timestamptz NOT NULL
);

-- Wake the relays promptly: one notification per inserting statement on channel postbox_outbox, with the schema
-- name as payload (channel names are limited to 63 bytes; schema names need not be). Relays ignore other schemas'
-- notifications and fall back to polling when notifications are lost or disabled.
CREATE FUNCTION postbox_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('postbox_outbox', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;

CREATE TRIGGER postbox_outbox_notify
    AFTER INSERT ON postbox_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION postbox_outbox_notify();
