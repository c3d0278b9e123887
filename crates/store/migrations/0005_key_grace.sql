-- Key rotation with a grace period: the previous key keeps working until it expires.
ALTER TABLE branches ADD COLUMN prev_api_key_hash TEXT;
ALTER TABLE branches ADD COLUMN prev_key_expires_at BIGINT;
CREATE INDEX branches_prev_key ON branches(prev_api_key_hash);
