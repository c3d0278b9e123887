-- SQLite only (its trigram index is filled in batches); PostgreSQL's GIN index stays as it is.
SELECT 1;
