-- SQLite has no stored functions, and a trigger fires on one kind of statement: one each.
CREATE TRIGGER credit_ledger_no_update BEFORE UPDATE ON credit_ledger
BEGIN
    SELECT RAISE(ABORT, 'credit_ledger is append-only');
END;
CREATE TRIGGER credit_ledger_no_delete BEFORE DELETE ON credit_ledger
BEGIN
    SELECT RAISE(ABORT, 'credit_ledger is append-only');
END;
