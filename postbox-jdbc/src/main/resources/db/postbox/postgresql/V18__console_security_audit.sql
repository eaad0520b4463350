-- Postbox, version 18: the web console's security events in the audit (postbox-console).
--
-- LOGIN_FAILED: a wrong user name or password (by_whom: the name tried; what: the client address).
-- LOGIN_THROTTLED: a login attempt refused by the back-off without checking the password.
-- ACCESS_DENIED: a logged-in user's request refused for their role.
-- REQUEST_REJECTED: a state-changing request refused as cross-site (Origin) or with a missing or stale CSRF token.
-- how_many is 0 for each (nothing changed).
ALTER TABLE postbox_replay_audit DROP CONSTRAINT postbox_replay_audit_action;
ALTER TABLE postbox_replay_audit ADD CONSTRAINT postbox_replay_audit_action CHECK (action IN
    ('REPLAY', 'DISCARD', 'EDIT', 'RELEASE_PARKED', 'SKIP_PARKED', 'RETRY_BLOCKED', 'SKIP_BLOCKED',
     'REVEAL_PAYLOAD', 'LOGIN_FAILED', 'LOGIN_THROTTLED', 'ACCESS_DENIED', 'REQUEST_REJECTED'));
