-- The submission service (python -m harness serve): its users and its queue of submissions.
-- A submission row is the job: it lives here from upload to result, so a restart loses nothing.

CREATE TABLE users (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT    NOT NULL UNIQUE,
    key_id      TEXT    NOT NULL UNIQUE,  -- the token's public half: finds the row without a scan
    salt        BLOB    NOT NULL,
    token_hash  BLOB    NOT NULL,         -- scrypt(secret half, salt); the token itself is never stored
    created_at  TEXT    NOT NULL
);

CREATE TABLE submissions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users(id),
    problem      TEXT    NOT NULL,
    mode         TEXT    NOT NULL,          -- test | benchmark | leaderboard
    filename     TEXT    NOT NULL,
    source       BLOB    NOT NULL,          -- the uploaded file; shown to its owner only
    sha256       TEXT    NOT NULL,
    status       TEXT    NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done')),
    attempts     INTEGER NOT NULL DEFAULT 0,  -- times handed to the executor (a restart mid-run adds one)
    created_at   TEXT    NOT NULL,          -- UTC, ISO 8601
    started_at   TEXT,
    finished_at  TEXT,
    run_id       INTEGER REFERENCES runs(id),  -- ranked-mode results also go to the leaderboard's runs
    result_json  TEXT                          -- RunResult.to_json(), as harness eval --json writes it
);

CREATE INDEX submissions_by_status ON submissions (status, id);
CREATE INDEX submissions_by_user ON submissions (user_id, created_at);
