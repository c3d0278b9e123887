-- Account states (issue: tenancy) and billing cycles.
CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    banned     BOOLEAN NOT NULL DEFAULT false,
    created_at BIGINT NOT NULL
);

ALTER TABLE services ADD COLUMN state TEXT NOT NULL DEFAULT 'active';
ALTER TABLE services ADD COLUMN expires_at BIGINT;
ALTER TABLE services ADD COLUMN owner_id TEXT REFERENCES users(id);
ALTER TABLE services ADD COLUMN billing_anchor BIGINT NOT NULL DEFAULT 0;
-- The cycle that used_quota counts; an older value than the current cycle means "0 used now".
ALTER TABLE services ADD COLUMN cycle_start BIGINT NOT NULL DEFAULT 0;
ALTER TABLE branches ADD COLUMN cycle_start BIGINT NOT NULL DEFAULT 0;

-- Existing services: anchored at creation, so the counts of their first cycle are kept.
UPDATE services SET billing_anchor = created_at, cycle_start = created_at;
UPDATE branches SET cycle_start = (SELECT s.created_at FROM services s WHERE s.id = branches.service_id);
