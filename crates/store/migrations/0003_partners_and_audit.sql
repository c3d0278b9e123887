-- Partner API (quota management by resellers) and the audit log of quota changes.
CREATE TABLE partners (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    -- SHA-256 of the 64-hex key sent as X-API-Key.
    api_key_hash TEXT NOT NULL UNIQUE,
    -- Needed in clear to check HMAC signatures; never returned after creation.
    secret       TEXT NOT NULL,
    -- Comma-separated: quota:read, quota:write.
    permissions  TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);

CREATE TABLE partner_services (
    partner_id TEXT NOT NULL REFERENCES partners(id),
    service_id TEXT NOT NULL REFERENCES services(id),
    PRIMARY KEY (partner_id, service_id)
);

-- Each nonce is accepted once; the primary key decides replays, also across nodes.
CREATE TABLE partner_nonces (
    partner_id TEXT NOT NULL,
    nonce      TEXT NOT NULL,
    seen_at    BIGINT NOT NULL,
    PRIMARY KEY (partner_id, nonce)
);
CREATE INDEX partner_nonces_seen ON partner_nonces(partner_id, seen_at);

-- `seq` orders entries as they were committed, also within one millisecond.
CREATE TABLE audit_log (
    seq        BIGSERIAL PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    at         BIGINT NOT NULL,
    actor      TEXT NOT NULL,
    action     TEXT NOT NULL,
    service_id TEXT,
    branch_id  TEXT,
    -- JSON: the values before and after.
    detail     TEXT NOT NULL
);
CREATE INDEX audit_log_branch ON audit_log(branch_id, seq);
