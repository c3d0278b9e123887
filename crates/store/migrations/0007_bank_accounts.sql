-- Receiving accounts a branch registers (compat.md bank accounts), matched against slips'
-- receivers with `matchAccount`. Deleting keeps the row (inactive) for the record; the
-- partial unique index is what refuses a second *active* account with the same bank and
-- number in one service, whatever the concurrency.
CREATE TABLE bank_accounts (
    id           TEXT PRIMARY KEY,
    service_id   TEXT NOT NULL REFERENCES services(id),
    branch_id    TEXT NOT NULL REFERENCES branches(id),
    bank_code    TEXT NOT NULL,
    bank_number  TEXT NOT NULL,
    name_th      TEXT NOT NULL,
    name_en      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    extra_verify TEXT,
    active       BOOLEAN NOT NULL,
    created_at   BIGINT NOT NULL,
    deleted_at   BIGINT
);
CREATE UNIQUE INDEX bank_accounts_active_number ON bank_accounts(service_id, bank_code, bank_number) WHERE active;
CREATE INDEX bank_accounts_branch ON bank_accounts(branch_id);
