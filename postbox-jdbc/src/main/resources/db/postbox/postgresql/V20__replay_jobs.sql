-- Postbox, version 20: bulk replays of dead letters as tracked background jobs (postbox-admin's ReplayJobs), so a
-- replay of thousands of letters has progress, pause, resume and cancel, and survives a restart of the console.
--
-- postbox_replay_job: one job: who started it, why, what it selected, its state and who works it until when.
--   state: RUNNING (a runner works it, or will), PAUSED, CANCELLED, DONE. replayed, skipped, failed: the letters
--   worked so far, counted in the transaction that writes each letter's outcome. owner and lease_until: the runner that
--   works it; a lease that expired (its console stopped) is free for the next runner, which carries on where the
--   letters' outcomes say. Times come from the application's clock.
-- postbox_replay_job_letter: the letters the job covers, fixed when it is created (seq: oldest first), each with its
--   outcome once worked (NULL: still to do). A runner locks the row it works (FOR UPDATE SKIP LOCKED) and writes the
--   outcome after the letter's own replay transaction; the replay itself locks the dead letter and checks it is
--   still PENDING, so a letter is never written twice, and one replayed or discarded meanwhile counts as SKIPPED (as
--   does the one letter a runner replayed just before it stopped, without writing its outcome).
-- REPLAY_JOB: the audit row of a job's creation (how_many: its letters; reason: the operator's); each letter's replay
--   has its own REPLAY row as before.
CREATE TABLE postbox_replay_job (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at  timestamptz NOT NULL,
    created_by  text        NOT NULL,
    reason      text        NOT NULL,
    selection   text        NOT NULL,
    route       text        NOT NULL CONSTRAINT postbox_replay_job_route CHECK (route IN ('TARGETED', 'BROADCAST')),
    state       text        NOT NULL CONSTRAINT postbox_replay_job_state
                                CHECK (state IN ('RUNNING', 'PAUSED', 'CANCELLED', 'DONE')),
    total       integer     NOT NULL,
    replayed    integer     NOT NULL DEFAULT 0,
    skipped     integer     NOT NULL DEFAULT 0,
    failed      integer     NOT NULL DEFAULT 0,
    started_at  timestamptz,
    progress_at timestamptz,
    finished_at timestamptz,
    changed_by  text,
    owner       text,
    lease_until timestamptz NOT NULL DEFAULT '-infinity'
);
-- the runners' claim: RUNNING jobs, oldest first
CREATE INDEX postbox_replay_job_running ON postbox_replay_job (id) WHERE state = 'RUNNING';

CREATE TABLE postbox_replay_job_letter (
    job_id         bigint      NOT NULL REFERENCES postbox_replay_job (id) ON DELETE CASCADE,
    seq            integer     NOT NULL,
    dead_letter_id bigint      NOT NULL,
    outcome        text        CONSTRAINT postbox_replay_job_letter_outcome
                                   CHECK (outcome IN ('REPLAYED', 'SKIPPED', 'FAILED')),
    done_at        timestamptz,
    PRIMARY KEY (job_id, seq)
);
-- the next letter to work
CREATE INDEX postbox_replay_job_letter_todo ON postbox_replay_job_letter (job_id, seq) WHERE outcome IS NULL;

ALTER TABLE postbox_replay_audit DROP CONSTRAINT postbox_replay_audit_action;
ALTER TABLE postbox_replay_audit ADD CONSTRAINT postbox_replay_audit_action CHECK (action IN
    ('REPLAY', 'DISCARD', 'EDIT', 'RELEASE_PARKED', 'SKIP_PARKED', 'RETRY_BLOCKED', 'SKIP_BLOCKED',
     'REVEAL_PAYLOAD', 'LOGIN_FAILED', 'LOGIN_THROTTLED', 'ACCESS_DENIED', 'REQUEST_REJECTED', 'REPLAY_JOB'));
