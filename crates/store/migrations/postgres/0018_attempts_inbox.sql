-- The log's own columns (no index); `id` takes its default from the log's sequence, which
-- keeps the order of arrival.
CREATE TABLE attempts_inbox (LIKE attempts INCLUDING DEFAULTS);
