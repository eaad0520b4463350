-- Postbox inbox, version 5: remember a fingerprint (SHA-256) of each applied payload, so that a message that
-- arrives again with the same id but a different payload is recorded as a conflict instead of being silently
-- deduplicated. Rows written before this version have no fingerprint and are treated as plain duplicates.
ALTER TABLE postbox_inbox ADD COLUMN payload_sha256 bytea;
