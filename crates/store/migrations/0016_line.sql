-- The LINE slip bot (issue 32): one Official Account per branch. The channel secret and token
-- are kept in clear like webhook secrets (needed to check signatures and to call LINE) and are
-- never shown by the API (only set / not set).
CREATE TABLE line_channels (
    branch_id         TEXT PRIMARY KEY REFERENCES branches(id),
    channel_secret    TEXT,
    channel_token     TEXT,
    notify_to         TEXT,
    language          TEXT NOT NULL DEFAULT 'th',
    group_mode        TEXT NOT NULL DEFAULT 'silent',
    push              BOOLEAN NOT NULL DEFAULT false,
    push_daily_limit  BIGINT NOT NULL DEFAULT 50
);
-- Each webhookEventId is processed once, also when LINE redelivers; kept 24 h.
CREATE TABLE line_events (
    branch_id   TEXT NOT NULL,
    event_id    TEXT NOT NULL,
    seen_at     BIGINT NOT NULL,
    PRIMARY KEY (branch_id, event_id)
);
CREATE INDEX line_events_seen ON line_events(seen_at);
-- Pushes cost money: counted per branch per Thai day against `push_daily_limit`.
CREATE TABLE line_pushes (
    branch_id   TEXT NOT NULL,
    day         TEXT NOT NULL,
    used        BIGINT NOT NULL,
    PRIMARY KEY (branch_id, day)
);
