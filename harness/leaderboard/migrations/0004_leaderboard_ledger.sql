-- A leaderboard run (one organizer command) and the entries it planned: an interrupted run lists
-- what it did not run, and the next command with the same scope resumes it, running only that.
-- runs.run_key names the job a run is the result of; its unique index makes storing one job's
-- result twice impossible, whatever retries, reconnects or restarts happen.

CREATE TABLE leaderboard_runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    scope        TEXT    NOT NULL,  -- device name, harness version, problems, --force: what a resume must match
    state        TEXT    NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'interrupted', 'finished')),
    started_at   TEXT    NOT NULL,  -- UTC, ISO 8601
    finished_at  TEXT
);

CREATE TABLE leaderboard_entries (
    leaderboard_run_id  INTEGER NOT NULL REFERENCES leaderboard_runs(id),
    run_key             TEXT    NOT NULL UNIQUE,  -- the key its result is stored under in runs
    problem             TEXT    NOT NULL,
    submission_path     TEXT    NOT NULL,
    sha256              TEXT    NOT NULL,
    author              TEXT    NOT NULL,
    run_id              INTEGER REFERENCES runs(id),  -- its result (this run's, or a cached one); NULL: not run
    PRIMARY KEY (leaderboard_run_id, problem, submission_path, sha256)
);

ALTER TABLE runs ADD COLUMN run_key TEXT;  -- NULL for runs stored before this migration and harness failures
CREATE UNIQUE INDEX runs_by_key ON runs (run_key) WHERE run_key IS NOT NULL;

-- The per-GPU check: the same file with the same seed on every GPU of a leaderboard run.
CREATE TABLE gpu_checks (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    leaderboard_run_id  INTEGER NOT NULL REFERENCES leaderboard_runs(id),
    check_key           TEXT    NOT NULL UNIQUE,  -- leaderboard run, file, worker: one sample per GPU
    problem             TEXT    NOT NULL,
    sha256              TEXT    NOT NULL,
    result_json         TEXT    NOT NULL,         -- RunResult.to_json(); its device names the GPU
    recorded_at         TEXT    NOT NULL
);
