-- Issue 15 item 7: test branches. A test branch verifies on the sandbox ledger, is never
-- charged, and keeps its slips apart from production: its own table, so production duplicate
-- detection (`verifications`, the charge writer) cannot see test verifications, nor the reverse.
ALTER TABLE branches ADD COLUMN sandbox BOOLEAN NOT NULL DEFAULT FALSE;
-- Test verifications of the branch, duplicates included, ever (shown in /v2/info).
ALTER TABLE branches ADD COLUMN sandbox_used BIGINT NOT NULL DEFAULT 0;

-- One row per slip per service among test verifications: the primary key decides first vs
-- duplicate, as in `verifications`.
CREATE TABLE sandbox_verifications (
    service_id     TEXT NOT NULL REFERENCES services(id),
    sending_bank   TEXT NOT NULL,
    trans_ref      TEXT NOT NULL,
    branch_id      TEXT NOT NULL REFERENCES branches(id),
    amount_satang  BIGINT NOT NULL,
    transferred_at BIGINT NOT NULL,
    verified_at    BIGINT NOT NULL,
    transfer_json  TEXT,
    source         TEXT,
    PRIMARY KEY (service_id, sending_bank, trans_ref)
);
