-- A verified request's record is committed in its charge's transaction (issue 30). Written
-- straight into `attempts`, each record made that transaction — the one every verification
-- waits for — update six indexes and rewrite their pages in the WAL at every commit
-- (docs/benchmarks.md, issue 30). Here it lands in a table with no index; a task of its own
-- moves the rows into `attempts` in bulk every quarter second, and every read of the log moves
-- them first, so a search never misses a committed record.
-- The log's own columns (no constraint, no index); the table's rowid keeps the order of arrival.
CREATE TABLE attempts_inbox AS SELECT * FROM attempts WHERE false;
-- The plain index on `trans_ref` served only a `q` of one or two characters taken as a whole
-- reference; such a `q` is now read as an amount only (a reference is 3 characters or more,
-- found through the trigram index). It was the costliest index to keep up (random positions).
DROP INDEX attempts_ref;
-- The trigram index without positions or column sizes (`detail=none`, `columnsize=0`): a
-- `LIKE '%part%'` still uses it (each candidate is checked against the row), and each reference
-- costs about 30 % less to index. Rebuilt from the start: the upkeep indexes a few thousand
-- records a turn, and until it has caught up searches read the rest unindexed.
DROP TRIGGER attempts_ref_delete;
DROP TABLE attempt_refs;
CREATE VIRTUAL TABLE attempt_refs USING fts5(
    trans_ref, content='attempts', content_rowid='id', tokenize='trigram',
    detail='none', columnsize=0
);
UPDATE attempt_refs_mark SET upto = 0 WHERE only = 1;
CREATE TRIGGER attempts_ref_delete AFTER DELETE ON attempts
WHEN old.trans_ref IS NOT NULL AND old.id <= (SELECT upto FROM attempt_refs_mark WHERE only = 1)
BEGIN
    INSERT INTO attempt_refs(attempt_refs, rowid, trans_ref) VALUES ('delete', old.id, old.trans_ref);
END;
