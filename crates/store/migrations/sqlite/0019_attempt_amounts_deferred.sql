-- The amount index is filled in batches with the trigram index (`attempts::index_refs`), from
-- the same mark, instead of on every insert: an amount lands at a random place in the index,
-- so each record moved into the log dirtied a page of its own, written to the WAL at the
-- move's commit under SQLite's one write lock — about half the log's cost a verification
-- (docs/benchmarks.md, issue 30). A search also reads the amounts after the mark directly.
DROP INDEX attempts_amount;
CREATE TABLE attempt_amounts (
    amount_satang BIGINT NOT NULL,
    at            BIGINT NOT NULL,
    id            BIGINT NOT NULL,
    PRIMARY KEY (amount_satang, at, id)
) WITHOUT ROWID;
INSERT INTO attempt_amounts (amount_satang, at, id)
SELECT amount_satang, at, id FROM attempts
WHERE amount_satang IS NOT NULL AND id <= (SELECT upto FROM attempt_refs_mark WHERE only = 1);
-- Only indexed rows are in it; a purge takes them out with their records.
CREATE TRIGGER attempts_amount_delete AFTER DELETE ON attempts
WHEN old.amount_satang IS NOT NULL AND old.id <= (SELECT upto FROM attempt_refs_mark WHERE only = 1)
BEGIN
    DELETE FROM attempt_amounts
    WHERE amount_satang = old.amount_satang AND at = old.at AND id = old.id;
END;
