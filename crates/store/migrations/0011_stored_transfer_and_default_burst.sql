-- Issue 14: each verification keeps the transfer it confirmed (the full answer as JSON, see
-- `domain::model::VerifiedTransfer`) and which connector confirmed it, so a duplicate can be
-- answered with the slip and the operator console can show it. Rows from before stay NULL.
ALTER TABLE verifications ADD COLUMN transfer_json TEXT;
ALTER TABLE verifications ADD COLUMN source TEXT;

-- The default plan refused ordinary automation runs (burst 5): allow a burst of 100 at the
-- same 10 req/s. Only the seeded values are changed; an operator's own setting stays.
UPDATE plans SET burst = 100 WHERE name = 'default' AND rps = 10 AND burst = 5;
