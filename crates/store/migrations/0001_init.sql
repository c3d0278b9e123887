-- Instants are Unix milliseconds (BIGINT), amounts whole satang: identical on both backends.
CREATE TABLE services (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL,
    limit_quota      BIGINT,
    used_quota       BIGINT NOT NULL DEFAULT 0,
    total_used_quota BIGINT NOT NULL DEFAULT 0,
    created_at       BIGINT NOT NULL
);

CREATE TABLE branches (
    id               TEXT PRIMARY KEY,
    service_id       TEXT NOT NULL REFERENCES services(id),
    name             TEXT NOT NULL,
    is_main          BOOLEAN NOT NULL,
    active           BOOLEAN NOT NULL,
    api_key_hash     TEXT NOT NULL UNIQUE,
    allow_ips        TEXT NOT NULL,
    webhook_url      TEXT,
    webhook_secret   TEXT,
    limit_quota      BIGINT,
    used_quota       BIGINT NOT NULL DEFAULT 0,
    total_used_quota BIGINT NOT NULL DEFAULT 0,
    created_at       BIGINT NOT NULL
);
CREATE INDEX branches_service ON branches(service_id);
-- At most one main branch per service.
CREATE UNIQUE INDEX branches_one_main ON branches(service_id) WHERE is_main;

-- One row per slip per service: the primary key is what makes duplicate detection race-free.
CREATE TABLE verifications (
    service_id     TEXT NOT NULL REFERENCES services(id),
    sending_bank   TEXT NOT NULL,
    trans_ref      TEXT NOT NULL,
    branch_id      TEXT NOT NULL REFERENCES branches(id),
    amount_satang  BIGINT NOT NULL,
    transferred_at BIGINT NOT NULL,
    verified_at    BIGINT NOT NULL,
    PRIMARY KEY (service_id, sending_bank, trans_ref)
);

-- The built-in sandbox bank's ledger.
CREATE TABLE sandbox_transfers (
    sending_bank      TEXT NOT NULL,
    trans_ref         TEXT NOT NULL,
    payload           TEXT NOT NULL,
    occurred_at       BIGINT NOT NULL,
    country_code      TEXT NOT NULL,
    amount_satang     BIGINT NOT NULL,
    fee_satang        BIGINT NOT NULL,
    ref1              TEXT NOT NULL,
    ref2              TEXT NOT NULL,
    ref3              TEXT NOT NULL,
    sender_name_th    TEXT NOT NULL,
    sender_name_en    TEXT,
    sender_acc_type   TEXT NOT NULL,
    sender_account    TEXT NOT NULL,
    receiving_bank    TEXT NOT NULL,
    receiver_name_th  TEXT NOT NULL,
    receiver_name_en  TEXT,
    receiver_acc_type TEXT NOT NULL,
    receiver_account  TEXT NOT NULL,
    merchant_id       TEXT,
    PRIMARY KEY (sending_bank, trans_ref)
);
