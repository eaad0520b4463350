-- Postbox, version 21: the oldest unfinished message of each queue a subscription's instances consume (ConsumerAgeStore),
-- so that a process without a consumer (the command line, a console) reads a queue's lag as age. RabbitMQ cannot give
-- the head message's age of a quorum queue from outside; the consumer, to which the broker pushes the head, can.
--
-- postbox_consumer_age: one row per (subscription, queue, instance): the time of the oldest message the instance
--   received from the queue and has not finished (NULL: none), as of reported_at. Both times come from the
--   application's clock. An instance replaces its rows on every report, deletes them at a clean shutdown; a reader
--   ignores rows older than its staleness bound, and a report deletes its subscription's rows older than an hour.
CREATE TABLE postbox_consumer_age (
    consumer          text        NOT NULL,
    queue             text        NOT NULL,
    instance          text        NOT NULL,
    oldest_unfinished timestamptz,
    reported_at       timestamptz NOT NULL,
    PRIMARY KEY (consumer, queue, instance)
);
