-- The log's own columns (no constraint, no index); the table's rowid keeps the order of arrival.
CREATE TABLE attempts_inbox AS SELECT * FROM attempts WHERE false;
