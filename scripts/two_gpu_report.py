"""The table of scripts/two_gpu_check.sh: leaderboards on one GPU and on two, a killed worker, the service.

From what the steps left under OUT: wall per configuration, speed-up against the 1-GPU run, the
medians' largest difference from it, the leaderboard entries ranked (or listed) once, lost and
doubled (from the ledger, the stored runs and the pages themselves), where each run's time went,
the per-GPU check, and the service's answered-once count and throughput on one GPU and on two.
Then each leaderboard run's phases (issue 35: a job took 20-22 s on the cluster against 16 s
serially): the sum over its jobs of every phase of ``RunResult.wall_s`` (harness.judge.verdict.wall_clock),
and what the jobs' workers were busy beyond the evaluator's own seconds (the Dask worker's imports,
the result's way back), so a run slower per job shows in which phase.

    python3 scripts/two_gpu_report.py OUT      -> OUT/two_gpu.md (printed too) and OUT/two_gpu.json
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from harness.judge.verdict.wall_clock import PHASES

PARTS = ("submission_import", "worker_head_start", "supervisor", "supervisor_notifications")
"""wall_s figures that are parts of a phase, or no part of the wall (wall_clock's docstring), summed too."""
LISTS = ("ranking", "others", "not_rankable", "failed", "not_run")
RANKED = ("ranking", "others")


def loaded(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def entries(db: Path, site: Path) -> dict[str, Any] | None:
    """The last leaderboard run's entries: each planned file counted on the pages and in the store."""
    if not db.exists():
        return None
    with sqlite3.connect(db) as connection:
        ledger_run = connection.execute("SELECT MAX(id) FROM leaderboard_runs").fetchone()[0]
        planned = connection.execute("SELECT problem, submission_path FROM leaderboard_entries "
                                     "WHERE leaderboard_run_id = ?", (ledger_run,)).fetchall()
        stored = connection.execute("SELECT problem, submission_path, COUNT(*) FROM runs WHERE run_key LIKE ? "
                                    "GROUP BY problem, submission_path", (f"leaderboard/{ledger_run}/%",)).fetchall()
    on_pages: dict[tuple[str, str], list[str]] = {}
    for problem in {p for p, _ in planned}:
        board = loaded(site / problem / "leaderboard.json") or {}
        for kind in LISTS:
            for entry in board.get(kind, []):
                on_pages.setdefault((problem, entry["file"]), []).append(kind)
    files = [(problem, Path(path).name) for problem, path in planned]
    kinds = [on_pages.get(key, []) for key in files]
    return {
        "entries": len(files),
        "ranked_once": sum(len(k) == 1 and k[0] in RANKED for k in kinds),
        "listed_once": sum(len(k) == 1 and k[0] in ("not_rankable", "failed") for k in kinds),
        "lost": sum(not k or k == ["not_run"] for k in kinds),
        "doubled": sum(len(k) > 1 for k in kinds) + sum(count - 1 for _, _, count in stored),
        "gpu_agreement": next((loaded(site / problem / "leaderboard.json").get("gpu_agreement")
                               for problem in sorted({p for p, _ in planned})
                               if (site / problem / "leaderboard.json").exists()), None),
    }


def phase_split(db: Path) -> dict[str, Any] | None:
    """The last leaderboard run's stored jobs: how many, their evaluator seconds, and each wall_s figure
    summed over them (a job that never reached the evaluator, a harness failure, adds nothing)."""
    if not db.exists():
        return None
    with sqlite3.connect(db) as connection:
        ledger_run = connection.execute("SELECT MAX(id) FROM leaderboard_runs").fetchone()[0]
        rows = connection.execute("SELECT elapsed_s, result_json FROM runs WHERE run_key LIKE ?",
                                  (f"leaderboard/{ledger_run}/%",)).fetchall()
    sums: dict[str, float] = {}
    for _, result in rows:
        for name, seconds in (json.loads(result).get("wall_s") or {}).items():
            sums[name] = sums.get(name, 0.0) + seconds
    return {"jobs": len(rows), "elapsed_s": sum(e or 0.0 for e, _ in rows),
            "phases_s": {name: round(sums[name], 2) for name in (*PHASES, *PARTS) if name in sums}}


def phases_of(db: Path, timeline: dict[str, Any] | None) -> dict[str, Any] | None:
    """``phase_split`` of a run, with its workers' busy seconds beyond the evaluator's (its timeline)."""
    split = phase_split(db)
    busy = sum(w["busy_s"] for w in ((timeline or {}).get("workers") or {}).values())
    if split is not None and busy:
        split["outside_evaluator_s"] = round(busy - split["elapsed_s"], 2)
    return split


def where_time_went(timeline: dict[str, Any] | None) -> str:
    if not timeline:
        return ""
    workers = timeline.get("workers", {})
    jobs = "/".join(str(w["jobs"]) for w in workers.values())
    busy = "/".join(f"{w['busy_s']:.0f}" for w in workers.values())
    parts = [f"first job at {timeline.get('first_job_start_s')} s", f"jobs {jobs}, busy {busy} s per worker",
             f"tail {timeline.get('tail_s')} s", f"after last result {timeline.get('after_last_result_s')} s"]
    if timeline.get("cluster_start_s") is not None:
        parts.insert(0, f"cluster start {timeline['cluster_start_s']} s")
    cut = timeline.get("cut_short", [])
    if cut:
        parts.append("cut short: " + ", ".join(f"{c['worker']} {c['file']} at {c['start_s']:.1f} s" for c in cut))
    return "; ".join(parts)


def fmt(value: Any, spec: str = ".1f", unit: str = "") -> str:
    return "-" if value is None else format(value, spec) + unit


def leaderboard_rows(out: Path) -> list[dict[str, Any]]:
    scaling = loaded(out / "scaling" / "cluster_scaling.json") or {}
    walls, timelines = scaling.get("walls_s", {}), scaling.get("timelines") or {}
    serial = walls.get("serial_1gpu")
    rows = []
    for name, label in (("serial_1gpu", "1 GPU, serial"), ("local_2gpu", "2 GPUs, --cluster local"),
                        ("tcp_2gpu", "2 GPUs, TCP scheduler + 1 worker per GPU")):
        wall = walls.get(name)
        if wall is None:  # not run by this call's steps: no row
            continue
        counts = entries(out / "scaling" / f"{name}.db", out / "scaling" / name) or {}
        note = where_time_went(timelines.get(name))
        if name == "tcp_2gpu" and scaling.get("tcp_workers_start_s") is not None:
            note += f"; its workers started beforehand in {scaling['tcp_workers_start_s']:.1f} s (not in its wall)"
        rows.append({"run": label, "wall_s": wall, "speed_up": serial / wall if serial and wall else None,
                     "max_median_diff_pct": (scaling.get(name) or {}).get("max_median_deviation_pct"),
                     **counts, "where": note, "phases": phases_of(out / "scaling" / f"{name}.db", timelines.get(name))})
    kill_wall = (loaded(out / "kill" / "kill_2gpu.wall.json") or {}).get("kill_2gpu")
    counts = entries(out / "kill" / "kill_2gpu.db", out / "kill" / "site") or {}
    killed = (out / "kill" / "killed.txt").read_text().strip() if (out / "kill" / "killed.txt").exists() else "?"
    timeline = loaded(out / "kill" / "kill_2gpu.timeline.json")
    if kill_wall is not None:
        rows.append({"run": "2 GPUs, --cluster local, a Dask worker SIGKILLed mid-run", "wall_s": kill_wall,
                     "speed_up": None, "max_median_diff_pct": None, **counts,
                     "where": f"killed: {killed}; " + where_time_went(timeline),
                     "phases": phases_of(out / "kill" / "kill_2gpu.db", timeline)})
    restart = loaded(out / "scheduler" / "summary.json")
    if restart:
        rows.append({"run": "2 GPUs, TCP, the scheduler SIGKILLed and started again mid-run",
                     "wall_s": restart["wall_s"], "speed_up": None, "max_median_diff_pct": None,
                     **{key: restart[key] for key in ("entries", "ranked_once", "listed_once", "lost", "doubled")},
                     "where": f"killed {restart['killed_at_s']} s in; {restart['sent_again']} job(s) sent again; "
                              f"exit {restart['exit']}"})
    return rows


def throughput_ratio(two: dict[str, Any], one: dict[str, Any]) -> float | None:
    """Two GPUs' rate over one's, the restart's gap left out: the queue's own rates (first job's start
    to last job's end: the clients' start is in neither), else the clients' (older summaries)."""
    for rate in ("queue_per_min", "per_min"):
        mine = two.get(f"{rate}_without_restart") or two.get(rate)
        if mine and one.get(rate):
            return mine / one[rate]
    return None


def service_rows(out: Path) -> list[dict[str, Any]]:
    one = loaded(out / "service_1gpu" / "summary.json")
    rows = []
    for name, label in (("service_1gpu", "1 GPU"), ("service_2gpu", "2 GPUs, killed and restarted once")):
        summary = loaded(out / name / "summary.json")
        if summary is None:
            continue
        ratio = throughput_ratio(summary, one) if one and name != "service_1gpu" else None
        rows.append({"service": label, **summary, "throughput_vs_1gpu": ratio})
    return rows


def phase_table(lb: list[dict[str, Any]]) -> list[str]:
    """Each leaderboard run's phases summed over its jobs (s), the same columns for every run."""
    split = [(row["run"], row["phases"]) for row in lb if row.get("phases")]
    if not split:
        return []
    names = [name for name in (*PHASES, *PARTS) if any(name in phases["phases_s"] for _, phases in split)]
    lines = ["Phases summed over each run's jobs, s (RunResult.wall_s; 'busy beyond' is the workers' busy time "
             "less the evaluator's: imports in the worker, the result's way back):", "",
             "| run | jobs | evaluator | " + " | ".join(names) + " | busy beyond |", "|" + " --- |" * (len(names) + 4)]
    for run, phases in split:
        cells = [fmt(phases["phases_s"].get(name), ".0f" if name == "supervisor_notifications" else ".1f")
                 for name in names]
        lines.append(f"| {run} | {phases['jobs']} | {fmt(phases['elapsed_s'])} | " + " | ".join(cells) +
                     f" | {fmt(phases.get('outside_evaluator_s'))} |")
    return lines


def markdown(lb: list[dict[str, Any]], service: list[dict[str, Any]]) -> str:
    lines = ["| run | wall s | speed-up | medians: largest diff from 1 GPU | entries | ranked once | listed once "
             "| lost | doubled | where the time went |", "|" + " --- |" * 10] if lb else []
    for row in lb:
        lines.append(f"| {row['run']} | {fmt(row['wall_s'])} | {fmt(row['speed_up'], '.2f')} | "
                     f"{fmt(row['max_median_diff_pct'], '.2f', '%')} | {row.get('entries', '-')} | "
                     f"{row.get('ranked_once', '-')} | {row.get('listed_once', '-')} | {row.get('lost', '-')} | "
                     f"{row.get('doubled', '-')} | {row['where']} |")
    lines += ["", *phase_table(lb)] if lb else []
    agreement = next((row.get("gpu_agreement") for row in lb if row.get("gpu_agreement")), None)
    if agreement:
        lines += ["", "GPU check (one file, same seed, on each GPU): " + "; ".join(
            f"{g['label']}: {fmt(g['off_pct'], '+.2f')}% off its peers{' (FLAGGED)' if g['flagged'] else ''}"
            for g in agreement)]
    if service:  # the tables of the steps this call ran, only
        lines += ["", "| service | submissions | users | answered once | lost | answered twice | re-queued at the "
                  "restart | run again beyond it | wall s | answered per min | without the restart's gap | queue "
                  "per min (without the gap) | vs 1 GPU | seen by another user |", "|" + " --- |" * 14]
    for row in service:
        lines.append(f"| {row['service']} | {row['submissions']} | {row['users']} | {row['answered_once']} | "
                     f"{row['lost']} | {row['answered_twice']} | {row['requeued_at_restart']} | "
                     f"{row.get('extra_runs', '-')} | {fmt(row['wall_s'])} | {fmt(row['per_min'], '.2f')} | "
                     f"{fmt(row['per_min_without_restart'], '.2f')} | {fmt(row.get('queue_per_min'), '.2f')} "
                     f"({fmt(row.get('queue_per_min_without_restart'), '.2f')}) | "
                     f"{fmt(row['throughput_vs_1gpu'], '.2f')} | "
                     f"{len(row['own_only_problems'])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    lb, service = leaderboard_rows(out), service_rows(out)
    text = markdown(lb, service)
    (out / "two_gpu.md").write_text(text)
    (out / "two_gpu.json").write_text(json.dumps({"leaderboard": lb, "service": service}, indent=1, default=str))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
