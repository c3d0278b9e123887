-- v1 `account_not_verified`: the operator marks a service whose owner's verification (KYC) is
-- incomplete. Existing and new services are verified unless the operator says otherwise.
ALTER TABLE services ADD COLUMN owner_verified BOOLEAN NOT NULL DEFAULT true;

-- The biller id (15 digits) of a branch's merchant QRs (KSHOP, MAE_MANEE, TUNGNGERN) made by
-- `/api/v1/qr/generate`: the merchant's contract with its bank, so it is branch configuration.
ALTER TABLE branches ADD COLUMN biller_id TEXT;
