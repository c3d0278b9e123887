-- The built-in sandbox's TrueMoney Wallet ledger (TrueMoney slips are verified against it).
CREATE TABLE sandbox_wallet_transfers (
    transaction_id TEXT PRIMARY KEY,
    event          TEXT NOT NULL,
    payload        TEXT NOT NULL,
    occurred_at    BIGINT NOT NULL,
    amount_satang  BIGINT NOT NULL,
    sender_name    TEXT NOT NULL,
    sender_phone   TEXT NOT NULL,
    receiver_name  TEXT NOT NULL,
    receiver_phone TEXT NOT NULL
);
