-- Jobs of any kind (issue 31): a job row names its `kind` and carries the kind's own input as
-- JSON (`data`); the slip-specific columns of 0006 move into the `verify` kind's data. The
-- states, the lease, the callback and its delivery stay columns: every kind has them.
ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'verify';
ALTER TABLE jobs ADD COLUMN data TEXT NOT NULL DEFAULT '{}';
-- @own-part
-- The kind's own step is `run` (it was `verify`, the only kind).
UPDATE jobs SET stage = 'run' WHERE stage = 'verify';
ALTER TABLE jobs DROP COLUMN payload;
ALTER TABLE jobs DROP COLUMN check_duplicate;
ALTER TABLE jobs DROP COLUMN match_account;
ALTER TABLE jobs DROP COLUMN match_amount;
ALTER TABLE jobs DROP COLUMN remark;

-- Periodic jobs (expiry of old jobs, the Idempotency-Key sweep, ...): one lease row per job.
-- A node runs period `p` of a job only by the guarded UPDATE that takes the lease when no
-- live lease is held and `done_period < p`; finishing sets `done_period = p`. A node that
-- dies mid-run leaves its lease, which runs out: then another node takes the run over.
CREATE TABLE periodic_jobs (
    name         TEXT PRIMARY KEY,
    -- Start (ms since the epoch) of the last period whose run finished; -1: never.
    done_period  BIGINT NOT NULL DEFAULT -1,
    -- The node running it now (NULL: nobody) and until when its lease holds (ms). After a
    -- failed run, `lease_until` without a holder is "not again before".
    holder       TEXT,
    lease_until  BIGINT NOT NULL DEFAULT 0,
    -- The period the holder runs.
    period_start BIGINT,
    started_at   BIGINT,
    finished_at  BIGINT,
    runs         BIGINT NOT NULL DEFAULT 0,
    last_outcome TEXT
);
