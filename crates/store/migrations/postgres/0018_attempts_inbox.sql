-- A verified request's record is committed in its charge's transaction (issue 30). Written
-- straight into `attempts`, each record made that transaction — the one every verification
-- waits for — update six indexes and write them to the WAL at every commit
-- (docs/benchmarks.md, issue 30). Here it lands in a table with no
-- index; the writers move the rows into `attempts` in bulk about once a second, and every read
-- of the log moves them first, so a search never misses a committed record.
CREATE TABLE attempts_inbox (
    seq           BIGSERIAL PRIMARY KEY,
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
    mismatches    TEXT NOT NULL DEFAULT '',
    source        TEXT,
    latency_ms    BIGINT NOT NULL,
    request_id    TEXT,
    job_id        TEXT
);
-- The plain index on `trans_ref` served only a `q` of one or two characters taken as a whole
-- reference; such a `q` is now read as an amount only (a reference is 3 characters or more,
-- found through the trigram index). It was the costliest index to keep up (random positions).
DROP INDEX attempts_ref;
