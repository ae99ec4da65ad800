-- The cache lookup (same file, device, harness version) and a problem's runs, without a table scan.

CREATE INDEX runs_by_content ON runs (sha256, problem, device_name, harness_version);
CREATE INDEX runs_by_problem ON runs (problem, id);
CREATE INDEX cases_by_run ON cases (run_id, position);
