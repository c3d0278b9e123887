-- A part of a reference (`q`): trigrams, so `ILIKE '%part%'` uses an index instead of
-- reading every row. pg_trgm ships with PostgreSQL and is a trusted extension (13+): the
-- database's owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX attempts_ref_trgm ON attempts USING gin (trans_ref gin_trgm_ops);
