-- Idempotency-Key (issue 18): one row per (branch, key), kept 24 h. The INSERT that creates
-- the row decides which request runs; the others get its stored answer, 409 while it runs,
-- or 422 when their request differs (`fingerprint`: SHA-256 of the parsed request).
-- A running row holds a lease: a node that dies mid-request leaves it, and the key becomes
-- retryable once `lease_until` passes.
CREATE TABLE idempotency_keys (
    branch_id     TEXT NOT NULL,
    idem_key      TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    lease_until   BIGINT NOT NULL,
    -- The stored answer (2xx and 4xx); NULL while running or after a 5xx.
    status        BIGINT,
    body          TEXT,
    -- Set in the transaction that charges quota for this request, as `jobs.charged_first`:
    -- a retry after a crash between the charge and the answer is not charged again.
    charged_first BOOLEAN,
    PRIMARY KEY (branch_id, idem_key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
