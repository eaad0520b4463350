-- Postbox, version 19: shard leases of consumer groups (ShardLeaseStore), so that the instances of one subscription
-- share its shards (RabbitMQ: its shard queues) instead of all consuming all of them.
--
-- postbox_shard_member: the live instances of each group and their last heartbeat; a member not seen within the TTL
--   is forgotten by the next heartbeat of another.
-- postbox_shard_lease: who consumes which shard of a group, until when. A row is created by the first acquisition; an
--   expired lease (its owner stopped renewing) is free. Leases only balance the work: the broker's single active
--   consumer keeps a shard to one consumer, so there is no fencing epoch.
CREATE TABLE postbox_shard_member (
    consumer    text        NOT NULL,
    member      text        NOT NULL,
    seen_at     timestamptz NOT NULL,
    PRIMARY KEY (consumer, member)
);

CREATE TABLE postbox_shard_lease (
    consumer    text        NOT NULL,
    shard       integer     NOT NULL,
    owner       text,
    lease_until timestamptz NOT NULL DEFAULT '-infinity',
    PRIMARY KEY (consumer, shard)
);
