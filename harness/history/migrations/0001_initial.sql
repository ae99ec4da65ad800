-- One row per `python -m harness eval` of this user. The columns are what `history` lists;
-- result_json keeps the full RunResult.to_json() record, which `compare` reads.

CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    recorded_at        TEXT    NOT NULL,  -- when it was kept (UTC, ISO 8601)
    problem            TEXT    NOT NULL,
    submission_path    TEXT    NOT NULL,
    sha256             TEXT    NOT NULL DEFAULT '',
    mode               TEXT    NOT NULL,
    device_name        TEXT    NOT NULL,
    status             TEXT    NOT NULL,  -- harness.contract.results.Status value
    geomean_us         REAL,
    geomean_pct_of_sol REAL,
    result_json        TEXT    NOT NULL
);

CREATE INDEX runs_by_problem ON runs (problem, id);
