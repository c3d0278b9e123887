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
