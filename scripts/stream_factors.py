"""Which of a process's own objects a short kernel's event time follows (issue 38, GPU only for ``run``).

    python3 scripts/stream_factors.py run SEED OUT.json [--front]
    python3 scripts/stream_factors.py summary OUT.json ...

``run``, in one process: the timing ladder's 2 us memory rung and its 10-iteration chain, timed by torch's events,
each call behind a reading flush of twice the L2 and a queued sleep (``--front``: instead, a spin on every thread
slot of every SM, as the core's hold kernel). Calls go at random over the levels of two factors: the inputs'
placement (PLACEMENTS offsets in one pool) and the stream (STREAMS, each with its own event pair), for ROUNDS
rounds; an empty kernel between the same events stands for the event overhead. ``summary`` gives, per rung, each
factor's level effects (a level's median less the process's, averaged over the rounds) beside how much a level
moves from round to round, and the spread of the process medians across the files (one file a process).

A factor whose levels differ alike in every round is one a worker keeps for its life if it never varies it. Run 45
(docs/timing.md, "The short rungs move by stream too") found the stream (level sd 0.05 us on an H200; event pairs
and flush buffers showed none) and the core now takes eight streams in turn. ``--front`` asked whether the hold
in front of each call carries the 10-iteration chain's per-process spread in the harness (sd about 0.1 us): run 46
(gpu_check.sh ``factors``, eight processes behind each front) read the chain's process medians at sd 0.036 us behind
the spin against 0.050 behind the sleep, so it does not. Its summary is tested on the CPU
(tests/test_stream_factors.py).
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster_launch_probe import Spin, spin_ptx  # this folder's

ROOT = Path(__file__).resolve().parents[1]
LADDER_FILE = ROOT / "submissions" / "timing_ladder" / "triton_ladder.py"
RUNGS = {"memory": (65536, 1), "chain": (270336, 10)}
PLACEMENTS, STREAMS, ROUNDS, SAMPLES = 8, 8, 3, 16
POOL_BYTES = 256 << 20
SLEEP_CYCLES = 400_000  # about 200 us: outlasts Triton's launch from Python (40 000 did not, run 45 call 2)
FRONT_NS = 200_000
FACTORS = ("placement", "stream")


def run(seed: int, out: Path, front: bool) -> None:
    """One process's calls of both rungs (rows: round, rung, placement or -1 for the empty kernel, stream, us)."""
    import torch

    from harness.contract.ptx_module import PtxModule
    from harness.sol.replay_clock import load_shipped, reading_flush

    kernel, flush, rng = load_shipped(LADDER_FILE), reading_flush(), random.Random(seed)
    pool = torch.empty(POOL_BYTES, dtype=torch.uint8, device="cuda")
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in streams]
    threads = torch.cuda.get_device_properties(0).max_threads_per_multi_processor
    spin = Spin(blocks=torch.cuda.get_device_properties(0).multi_processor_count * (threads // 1024), ns=FRONT_NS,
                threads=1024)
    module = PtxModule(spin_ptx([spin])) if front else None
    empty = torch.empty(1, device="cuda")

    def timed(work: Callable[[], Any], stream: int) -> float:
        torch.cuda.synchronize()
        with torch.cuda.stream(streams[stream]):
            flush()
            if module:
                spin.launch(module)
            else:
                torch.cuda._sleep(SLEEP_CYCLES)
            start, end = events[stream]
            start.record()
            work()
            end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3

    rows: list[tuple[int, str, int, int, float]] = []
    for rung, (n, iters) in RUNGS.items():
        places = []
        for _ in range(PLACEMENTS):
            x_at, y_at = (rng.randrange(0, POOL_BYTES - 4 * n, 4096) for _ in range(2))
            x = pool[x_at:x_at + 4 * n].view(torch.float32).uniform_(-1, 1)
            places.append((x, pool[y_at:y_at + 4 * n].view(torch.float32)))
            kernel((*places[-1], iters))  # compiled and warm at every placement
        cells = [(p, s) for p in range(PLACEMENTS) for s in range(STREAMS)]
        for round_ in range(ROUNDS):
            for _ in range(SAMPLES):
                rng.shuffle(cells)
                for p, s in cells:
                    data = (*places[p], iters)
                    rows.append((round_, rung, p, s, timed(lambda data=data: kernel(data), s)))
                for s in range(STREAMS):
                    rows.append((round_, rung, -1, s, timed(empty.zero_, s)))
    out.write_text(json.dumps({"seed": seed, "front": front, "gpu": torch.cuda.get_device_name(0), "rows": rows}))
    print(f"seed {seed}{' front' if front else ''}: {len(rows)} calls -> {out}")


def level_effects(rows: list[list], factor: str) -> tuple[list[float], float]:
    """One process's rung: each level's effect (its median less the process's, averaged over the rounds) and the
    mean over levels of how much a level's effect moves from round to round (sd)."""
    column = 2 + FACTORS.index(factor)
    timed = [row for row in rows if row[2] >= 0]
    middle = statistics.median(row[4] for row in timed)
    levels, rounds = sorted({row[column] for row in timed}), sorted({row[0] for row in timed})
    per_round = [[statistics.median(row[4] for row in timed if row[0] == r and row[column] == level) - middle
                  for level in levels] for r in rounds]
    effects = [statistics.mean(column_) for column_ in zip(*per_round)]
    return effects, statistics.mean(statistics.pstdev(column_) for column_ in zip(*per_round))


def summary(runs: list[dict[str, Any]]) -> list[str]:
    """Per rung: each factor's level sd and round-to-round sd (mean over processes), and the process medians' sd."""
    lines = []
    for rung in RUNGS:
        medians, overheads = [], []
        spreads: dict[str, list[tuple[float, float]]] = {factor: [] for factor in FACTORS}
        for result in runs:
            rows = [row for row in result["rows"] if row[1] == rung]
            medians.append(statistics.median(row[4] for row in rows if row[2] >= 0))
            overheads.append(statistics.median(row[4] for row in rows if row[2] < 0))
            for factor in FACTORS:
                effects, noise = level_effects(rows, factor)
                spreads[factor].append((statistics.pstdev(effects), noise))
        parts = [f"{factor} level sd {statistics.mean(s for s, _ in pairs):.3f} (round to round "
                 f"{statistics.mean(n for _, n in pairs):.3f})" for factor, pairs in spreads.items()]
        lines.append(f"{rung}: {len(runs)} processes, medians sd {statistics.pstdev(medians):.3f} us "
                     f"({min(medians):.3f}-{max(medians):.3f}), empty kernel sd {statistics.pstdev(overheads):.3f}; "
                     + "; ".join(parts))
    return lines


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "run":
        run(int(argv[1]), Path(argv[2]), "--front" in argv[3:])
        return 0
    if len(argv) >= 2 and argv[0] == "summary":
        runs = [json.loads(Path(path).read_text()) for path in argv[1:]]
        for front in sorted({result["front"] for result in runs}):
            print(f"== {'a spin on every SM' if front else 'a queued sleep'} in front of each call")
            print("\n".join(summary([result for result in runs if result["front"] == front])))
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
