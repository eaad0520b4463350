-- Postbox, version 15: what the web console (postbox-console) needs from the tables.
--
-- REVEAL_PAYLOAD: an operator showed a dead letter's payload unmasked (OperatorActions.revealPayload). The row names
--   the letter, its message and consumer; how_many is 0 (nothing changed).
-- postbox_dead_letter_message_id: finding the letters of one message id across consumers (DeadLetterFilter.messageId,
--   the console's search by message id); the index of V3 leads with the consumer.
ALTER TABLE postbox_replay_audit DROP CONSTRAINT postbox_replay_audit_action;
ALTER TABLE postbox_replay_audit ADD CONSTRAINT postbox_replay_audit_action CHECK (action IN
    ('REPLAY', 'DISCARD', 'EDIT', 'RELEASE_PARKED', 'SKIP_PARKED', 'RETRY_BLOCKED', 'SKIP_BLOCKED',
     'REVEAL_PAYLOAD'));
CREATE INDEX postbox_dead_letter_message_id ON postbox_dead_letter (message_id) WHERE message_id IS NOT NULL;
