-- A part of a reference (`q`): trigrams, so `LIKE '%part%'` uses an index instead of
-- reading every row. The table holds no copy: it indexes `attempts.trans_ref`.
CREATE VIRTUAL TABLE attempt_refs USING fts5(
    trans_ref, content='attempts', content_rowid='id', tokenize='trigram'
);
CREATE TRIGGER attempts_ref_insert AFTER INSERT ON attempts
WHEN new.trans_ref IS NOT NULL BEGIN
    INSERT INTO attempt_refs(rowid, trans_ref) VALUES (new.id, new.trans_ref);
END;
CREATE TRIGGER attempts_ref_delete AFTER DELETE ON attempts
WHEN old.trans_ref IS NOT NULL BEGIN
    INSERT INTO attempt_refs(attempt_refs, rowid, trans_ref) VALUES ('delete', old.id, old.trans_ref);
END;
