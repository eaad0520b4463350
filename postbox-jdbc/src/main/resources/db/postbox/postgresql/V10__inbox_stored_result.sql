-- Postbox inbox, version 10: a stored result per applied message (business-level idempotency).
-- A handler may record the result of its effect (Delivery.recordResult); the inbox stores it on the message's
-- row in the effect's transaction, so the result commits with the effect or not at all. A later delivery of the
-- same id is suppressed as a duplicate and gets this stored result back instead of running the effect again
-- (a responder replies to a repeated request with the first reply). Rows without a recorded result, and rows
-- written before this version, have both columns null.
ALTER TABLE postbox_inbox ADD COLUMN result bytea;
ALTER TABLE postbox_inbox ADD COLUMN result_content_type text;
ALTER TABLE postbox_inbox ADD CONSTRAINT postbox_inbox_result_typed
    CHECK ((result IS NULL) = (result_content_type IS NULL));
