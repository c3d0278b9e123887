-- One PL/pgSQL function refuses both statements.
CREATE FUNCTION credit_ledger_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'credit_ledger is append-only';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER credit_ledger_no_change BEFORE UPDATE OR DELETE ON credit_ledger
    FOR EACH ROW EXECUTE FUNCTION credit_ledger_append_only();
