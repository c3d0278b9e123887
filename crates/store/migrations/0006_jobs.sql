-- Async verification jobs (spec 3, 6): one row per slip is the whole durable state, the
-- verification and its webhook delivery alike. Workers claim due rows by pushing `due_at`
-- out by a lease and stamping `lease_token`; a crashed worker's rows come due again when the
-- lease runs out, and every write-back is guarded by the token it claimed with.
CREATE TABLE jobs (
    id                  TEXT PRIMARY KEY,
    batch_id            TEXT,
    seq                 BIGINT NOT NULL,
    service_id          TEXT NOT NULL REFERENCES services(id),
    branch_id           TEXT NOT NULL REFERENCES branches(id),
    payload             TEXT NOT NULL,
    check_duplicate     BOOLEAN NOT NULL,
    match_account       BOOLEAN NOT NULL DEFAULT false,
    match_amount        BIGINT,
    remark              TEXT,
    callback_url        TEXT,
    status              TEXT NOT NULL,
    stage               TEXT NOT NULL,
    due_at              BIGINT NOT NULL,
    lease_token         TEXT,
    attempts            BIGINT NOT NULL DEFAULT 0,
    not_found_retries   BIGINT NOT NULL DEFAULT 0,
    outage_retries      BIGINT NOT NULL DEFAULT 0,
    -- Set in the transaction that charges quota for this job: a job is charged at most once,
    -- however often a crash makes it run again. The value is "first verification of the slip".
    charged_first       BOOLEAN,
    result              TEXT,
    error_code          TEXT,
    error_message       TEXT,
    webhook_state       TEXT NOT NULL,
    webhook_body        TEXT,
    webhook_signature   TEXT,
    webhook_attempts    BIGINT NOT NULL DEFAULT 0,
    webhook_last_status BIGINT,
    webhook_last_error  TEXT,
    webhook_first_at    BIGINT,
    webhook_last_at     BIGINT,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL,
    finished_at         BIGINT,
    expires_at          BIGINT NOT NULL
);
-- The work queue: only rows with something left to do.
CREATE INDEX jobs_due ON jobs(due_at) WHERE stage <> 'idle';
CREATE INDEX jobs_expires ON jobs(expires_at);
-- Handing back a stopping worker's jobs finds them by their lease.
CREATE INDEX jobs_lease ON jobs(lease_token) WHERE lease_token IS NOT NULL;
