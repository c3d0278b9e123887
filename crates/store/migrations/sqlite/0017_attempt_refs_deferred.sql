-- The trigram index of attempts' references is filled by the attempts writer about once a
-- second rather than by a trigger on every insert: the trigger made each verification pay
-- for FTS5 segment writes (scripts/bench-http: 8,181 → 3,505 req/s). A search also reads the
-- rows after `upto` (the last second's) directly, so nothing committed is ever missed.
DROP TRIGGER attempts_ref_insert;
CREATE TABLE attempt_refs_mark (
    only  INTEGER PRIMARY KEY CHECK (only = 1),
    upto  BIGINT NOT NULL
);
INSERT INTO attempt_refs_mark (only, upto) VALUES (1, COALESCE((SELECT MAX(id) FROM attempts), 0));
-- Only indexed rows are taken out of the index (FTS5 must not be told to delete what it lacks).
DROP TRIGGER attempts_ref_delete;
CREATE TRIGGER attempts_ref_delete AFTER DELETE ON attempts
WHEN old.trans_ref IS NOT NULL AND old.id <= (SELECT upto FROM attempt_refs_mark WHERE only = 1)
BEGIN
    INSERT INTO attempt_refs(attempt_refs, rowid, trans_ref) VALUES ('delete', old.id, old.trans_ref);
END;
