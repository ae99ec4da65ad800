-- The organizer's review (python -m harness review): one row per entry reviewed, one per flag.
-- A review command's run is one batch; the pages show each problem's latest batch.

CREATE TABLE reviews (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    batch            INTEGER NOT NULL,  -- one review command's run; increasing
    run_id           INTEGER NOT NULL REFERENCES runs(id),  -- the stored run reviewed (the entry's best)
    problem          TEXT    NOT NULL,
    rank             INTEGER,           -- the board's rank then (NULL for an author's other file)
    author           TEXT    NOT NULL,
    submission_path  TEXT    NOT NULL,
    sha256           TEXT    NOT NULL,
    score_us         REAL,
    verdict          TEXT    NOT NULL CHECK (verdict IN ('clean', 'look here', 'reproduces not')),
    not_run          TEXT    NOT NULL DEFAULT '',  -- one line per check that did not run, with why
    harness_version  TEXT    NOT NULL,
    reviewed_at      TEXT    NOT NULL,  -- UTC, ISO 8601
    review_json      TEXT    NOT NULL   -- the entry's review as the JSON file has it (flags, files, fresh run)
);

CREATE TABLE review_flags (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    review_id  INTEGER NOT NULL REFERENCES reviews(id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    class      TEXT    NOT NULL,  -- harness.review.findings.FlagClass value
    file       TEXT,
    line       INTEGER,
    evidence   TEXT    NOT NULL,
    rule       TEXT    NOT NULL DEFAULT ''  -- 'ours', 'kernelguard:<RULE>', 'physics', 'rerun', 'clock', 'sanitize'
);

CREATE INDEX reviews_by_problem ON reviews (problem, batch);
CREATE INDEX review_flags_by_review ON review_flags (review_id, position);
