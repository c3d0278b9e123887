-- Subscriptions and auto-renewal (issue 9): packages, each service's subscription, its
-- prepaid credit and the append-only credit ledger.
CREATE TABLE packages (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    quota         BIGINT NOT NULL CHECK (quota >= 0),
    duration_days BIGINT NOT NULL CHECK (duration_days > 0),
    price_satang  BIGINT NOT NULL CHECK (price_satang >= 0),
    created_at    BIGINT NOT NULL
);

ALTER TABLE services ADD COLUMN package_id TEXT REFERENCES packages(id);
ALTER TABLE services ADD COLUMN subscribed_at BIGINT;
ALTER TABLE services ADD COLUMN auto_renew_expiry BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE services ADD COLUMN auto_renew_quota BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE services ADD COLUMN renewal_seq BIGINT NOT NULL DEFAULT 0;
-- The ledger's running balance, kept on the row every renewal locks anyway; the CHECK is
-- the last word on "never negative", whatever the code above it does.
ALTER TABLE services ADD COLUMN credit_satang BIGINT NOT NULL DEFAULT 0 CHECK (credit_satang >= 0);

-- Every credit movement, in commit order. Rows are only ever added (triggers refuse
-- UPDATE and DELETE), and each carries the balance it left.
CREATE TABLE credit_ledger (
    seq           BIGSERIAL PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    service_id    TEXT NOT NULL REFERENCES services(id),
    at            BIGINT NOT NULL,
    kind          TEXT NOT NULL,
    amount_satang BIGINT NOT NULL,
    balance_after BIGINT NOT NULL CHECK (balance_after >= 0),
    actor         TEXT NOT NULL,
    note          TEXT
);
CREATE INDEX credit_ledger_service ON credit_ledger(service_id, seq);

-- @own-part

-- Async jobs waiting for billing have a retry budget of their own.
ALTER TABLE jobs ADD COLUMN billing_retries BIGINT NOT NULL DEFAULT 0;
