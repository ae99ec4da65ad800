-- One row per evaluation of one submission file (a ranked-mode RunResult), one row per case.
-- The columns are what queries need; result_json keeps the full RunResult.to_json() record.

CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    problem            TEXT    NOT NULL,
    submission_path    TEXT    NOT NULL,
    sha256             TEXT    NOT NULL,  -- of the file's bytes; the cache key with device and version
    author             TEXT    NOT NULL,  -- '#!POPCORN author', else the file's last git author, else 'unknown'
    device_name        TEXT    NOT NULL,
    device_json        TEXT    NOT NULL,  -- RunResult.device: name, capability, SMs, L2, clocks, torch
    sm_clock_mhz       REAL,
    max_sm_clock_mhz   REAL,
    mem_clock_mhz      REAL,
    harness_version    TEXT    NOT NULL,
    mode               TEXT    NOT NULL,
    status             TEXT    NOT NULL,  -- harness.results.Status value
    reason             TEXT    NOT NULL DEFAULT '',
    rankable           INTEGER NOT NULL,  -- 0/1: timed on a GPU, in full, every output checked
    harness_error      INTEGER NOT NULL DEFAULT 0,  -- 1: the evaluator itself raised; never a cache hit
    started_at         TEXT    NOT NULL DEFAULT '',  -- when the evaluator started (UTC, ISO 8601)
    recorded_at        TEXT    NOT NULL,  -- when the store saved the run (UTC, ISO 8601)
    elapsed_s          REAL,
    geomean_us         REAL,
    geomean_pct_of_sol REAL,
    result_json        TEXT    NOT NULL
);

CREATE TABLE cases (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,  -- order within the run
    kind        TEXT    NOT NULL,  -- 'test' or 'benchmark'
    case_json   TEXT    NOT NULL,  -- the case's keys (shape and seed) as JSON
    status      TEXT    NOT NULL,
    reason      TEXT    NOT NULL DEFAULT '',
    median_us   REAL,
    mean_us     REAL,
    std_us      REAL,
    min_us      REAL,
    max_us      REAL,
    runs        INTEGER,
    method      TEXT,
    sol_us      REAL,
    pct_of_sol  REAL
);
