-- The attempts log (issue 30): one row per verification request that passed authentication
-- and the rate limit, whatever its answer. No image, key, secret or name is stored here.
CREATE TABLE attempts (
    id            BIGSERIAL PRIMARY KEY,
    at            BIGINT NOT NULL,
    service_id    TEXT NOT NULL,
    branch_id     TEXT NOT NULL,
    channel       TEXT NOT NULL,
    kind          TEXT NOT NULL,
    input         TEXT,
    sending_bank  TEXT,
    trans_ref     TEXT,
    amount_satang BIGINT,
    outcome       TEXT NOT NULL,
    error_code    TEXT,
    -- Comma-separated (`amount_not_match,account_not_match`), '' when none.
    mismatches    TEXT NOT NULL DEFAULT '',
    source        TEXT,
    latency_ms    BIGINT NOT NULL,
    request_id    TEXT,
    job_id        TEXT
);
-- Newest first, alone or within a service, a branch or an outcome; the id breaks ties.
CREATE INDEX attempts_at ON attempts(at, id);
CREATE INDEX attempts_service_at ON attempts(service_id, at, id);
CREATE INDEX attempts_branch_at ON attempts(branch_id, at, id);
CREATE INDEX attempts_outcome_at ON attempts(outcome, at, id);
CREATE INDEX attempts_amount ON attempts(amount_satang, at);
CREATE INDEX attempts_ref ON attempts(trans_ref);
-- An async job's verification is recorded once, however often a crashed worker's job runs.
CREATE UNIQUE INDEX attempts_job ON attempts(job_id) WHERE job_id IS NOT NULL;
-- @own-part
-- Retention: when the personal fields of a stored transfer were blanked (NULL: not yet).
ALTER TABLE verifications ADD COLUMN personal_blanked_at BIGINT;
ALTER TABLE sandbox_verifications ADD COLUMN personal_blanked_at BIGINT;
CREATE INDEX verifications_to_blank ON verifications(verified_at) WHERE personal_blanked_at IS NULL;
CREATE INDEX sandbox_verifications_to_blank ON sandbox_verifications(verified_at) WHERE personal_blanked_at IS NULL;
