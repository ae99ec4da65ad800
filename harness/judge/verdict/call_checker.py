"""One call made and judged: its seed, the worker's answer, the parent's own inputs and the check.

The expected output is computed here, in the parent, from the call's seed, after the worker has
answered: never in the worker's memory, never competing with a timed call for the GPU. Inputs are
a pure function of (problem, case, seed): where an evaluation lists one case more than once, the
parent's copy of a seed's inputs and its expected output are drawn and computed once and kept for
its later calls (``share_draws``); each output is still checked against them.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import ModuleType
from typing import Any

import torch

from harness.contract.results import Status
from harness.contract.task_spec import Task
from harness.judge.verdict import seeds
from harness.judge.verdict.graph_draws import GraphDraws, expected_kernel
from harness.judge.worker_link.call_output import CallOutput
from harness.judge.worker_link.worker_channel import WorkerFailure, WorkerSession


class CallChecker:
    """Makes calls through a worker session and checks every output against the reference."""

    def __init__(self, task: Task, secret: int | None, check_device: torch.device, plain: bool) -> None:
        self.task = task
        self.secret = secret
        self.check_device = check_device
        self.plain = plain  # sanitize mode: no timer, no flush, no seal
        self.reference: ModuleType = importlib.import_module(task.reference_module)
        self._generator = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inputs")
        self.phases_ms: dict[str, float] = {}  # where the harness's time per call goes (the parent's clock)
        self.worker_ms: dict[str, float] = {}  # the same, as the worker reports it (shown, never trusted)
        self.phase_calls = 0
        self._shared: set[tuple] = set()  # cases listed more than once (share_draws)
        self._shared_calls = 0
        self._kept: dict[tuple, tuple[Any, Any]] = {}  # seeded case -> (inputs, expected output)
        self._early: dict[tuple, Future] = {}  # seeded case -> its (inputs, expected) computed ahead (expect_early)
        expected_by = expected_kernel(self.reference)
        self._takes_expected = expected_by is not None
        # On a CUDA check device a shape's later draws, and the reference on them where the check takes it,
        # replay graphs of the shape's (graph_draws); the CPU draws and computes plainly.
        self._graphs = (GraphDraws(self.reference.generate_input, check_device, expected_by)
                        if check_device.type == "cuda" else None)

    def share_draws(self, cases: list[dict[str, Any]], calls: int) -> None:
        """Keep the inputs and expected output of the first ``calls`` calls of every case that
        ``cases`` lists more than once (a test and a benchmark of one shape, say): drawn once."""
        keys = [_case_key(case) for case in cases]
        self._shared = {key for key in keys if keys.count(key) > 1} if self._takes_expected else set()
        self._shared_calls = calls

    def close(self) -> None:
        """Stop the thread that draws the parent's copies of the inputs."""
        self._generator.shutdown(cancel_futures=True)

    def reset_phases(self) -> None:
        self.phases_ms, self.worker_ms, self.phase_calls = {}, {}, 0

    def book(self, phase: str, ms: float) -> None:
        """``ms`` more of the parent's time in ``phase`` since ``reset_phases`` (shown per call by ``per_call``)."""
        self.phases_ms[phase] = self.phases_ms.get(phase, 0.0) + ms

    def per_call(self) -> tuple[dict[str, float], dict[str, float]]:
        """(the parent's phases, the worker's account) in ms per call since ``reset_phases``."""
        calls = max(1, self.phase_calls)
        return ({k: round(v / calls, 3) for k, v in self.phases_ms.items()},
                {k: round(v / calls, 3) for k, v in self.worker_ms.items()})

    def call_seed(self, case: dict[str, Any], index: int) -> int:
        """The seed of call ``index`` of ``case`` (public for call 0 unless ranked; harness.judge.verdict.seeds)."""
        return seeds.call_seed(case["seed"], index, self.secret)

    def check(self, inputs: Any, result: CallOutput, expected: Any = None) -> tuple[bool, str]:
        """Judge one output against the reference on the same inputs (the parent's own copy);
        ``expected``: the reference's output on them, when it was kept (else computed here)."""
        if isinstance(result.output, str):
            return False, result.output
        if result.unfinished:
            return False, (
                "the output changed after custom_kernel returned: work left running on another stream "
                "(make the caller's stream wait for it)"
            )
        if expected is None:
            return self.reference.check_implementation(inputs, result.output)
        return self.reference.check_implementation(inputs, result.output, expected=expected)

    def send_ahead(self, session: WorkerSession, case: dict[str, Any], timeout_s: float, buffers: str = "") -> bool:
        """Send ``case``'s first call (an untimed test's) now: the worker runs it while the parent
        still checks the last one (``checked_call``'s ``then``); its own checked_call collects it.
        False where the session did not send it (WorkerSession.send_ahead)."""
        seeded = {**case, "seed": self.call_seed(case, 0)}
        ranked = self.secret is not None and not self.plain
        drawn = not self.plain and session.draws(case)  # a test on a GPU is drawn only where a benchmark has its shape
        if ranked and not drawn and session.stages():
            return False  # a staged call's inputs are staged as it is sent
        drawn_seed = int(seeded["seed"]) if drawn else None
        return session.send_ahead(case if drawn else seeded, timeout_s, self.plain, buffers, drawn_seed)

    def checked_call(self, session: WorkerSession, case: dict[str, Any], index: int, sleep_us: float,
                     stage: str, timeout_s: float, prefetch: bool = False, buffers: str = "",
                     then: Callable[[], None] | None = None) -> CallOutput:
        """One call and its check; ``prefetch``: the worker draws call index+1's inputs meanwhile;
        ``buffers``: keep this call's input tensors, or refill the kept ones (WorkerSession.call);
        ``then``: run once the reply is in and sealed, before the check (``send_ahead``): never
        when the call itself failed, so a call that ends the case leaves nothing in flight."""
        seeded = {**case, "seed": self.call_seed(case, index)}
        kept_key = _case_key(seeded) if index < self._shared_calls and _case_key(case) in self._shared else None
        # On a GPU the worker's core draws the inputs of every shape it captured before the import, under the
        # seed sent masked for it (drawn): in every timed mode, so benchmark mode times the inputs ranked mode
        # does (evaluation.core_draws). Ranked: the worker never learns the seed; on the CPU the parent draws
        # them now, before the call (waited for: nothing of the parent's runs beside a timed call), and stages
        # them encrypted, the worker drawing only the layout under the case's public seed (input_stage).
        ranked = self.secret is not None and not self.plain
        drawn = not self.plain and session.draws(case)
        staged = ranked and not drawn and session.stages()
        parent: dict[str, Any] = {}
        if staged:
            started = time.perf_counter()
            parent["inputs"] = self._expected(seeded, kept_key, None, with_expected=False)[0]
            parent["draw"] = 1e3 * (time.perf_counter() - started)
        # On the GPU the parent's copy of the inputs and the reference are launched only once the
        # worker has answered (``answered``, run by the session before it checks the MAC: the GPU
        # works while the CPU digests), and the next call is sent only once the check has read its
        # verdict back: none of this overlaps a timed call. On the CPU (never ranked) the copy is
        # drawn on a thread meanwhile.
        drawing = None if self.check_device.type == "cuda" or kept_key in self._kept or staged else (
            self._generator.submit(self.reference.generate_input, **seeded, device="cpu"))

        def answered() -> None:
            started = time.perf_counter()
            if prefetch and not drawn:  # the worker draws the next call's inputs (untimed) while this is checked
                session.prepare(case if staged else {**case, "seed": self.call_seed(case, index + 1)})
            parent["inputs"], parent["expected"] = self._expected(seeded, kept_key, drawing, parent.get("inputs"))
            parent["draw"] = parent.get("draw", 0.0) + 1e3 * (time.perf_counter() - started)

        result = session.call(case if staged or drawn else seeded, sleep_us, stage, timeout_s, self.plain, buffers,
                              answered=answered, staged=parent["inputs"] if staged else None,
                              drawn_seed=int(seeded["seed"]) if drawn else None,
                              answer_early=not (prefetch and not drawn))  # a Prepare must wait for the reply
        if "expected" not in parent:  # a session that did not run it (the tests' scripted ones)
            answered()
        if then is not None:
            then()
        checking = time.perf_counter()
        ok, message = self.check(parent["inputs"], result, parent["expected"])
        spent = {**{k: 1e3 * v for k, v in result.phases_s.items()}, "draw": parent["draw"],
                 "check": 1e3 * (time.perf_counter() - checking)}
        for phase, ms in spent.items():
            self.book(phase, ms)
        for phase, ms in result.worker_ms.items():
            self.worker_ms[phase] = self.worker_ms.get(phase, 0.0) + ms
        self.phase_calls += 1
        if not ok:
            raise WorkerFailure(Status.FAILED, f"{stage} (call {index + 1} of this shape): {message}")
        return result

    def expect_early(self, case: dict[str, Any], pool: ThreadPoolExecutor) -> Future:
        """The inputs and expected output of ``case``'s first call, computed on ``pool`` now (on the GPU,
        synchronized) for its check to take: the parent's first use of its own kernels (Triton
        compiling or loading them) runs while the worker runs that call, not after it."""
        seeded = {**case, "seed": self.call_seed(case, 0)}
        future = pool.submit(self._draw_and_reference, seeded, True)
        self._early[_case_key(seeded)] = future
        return future

    def _draw_and_reference(self, seeded: dict[str, Any], synchronized: bool = False,
                            passing: bool = False) -> tuple[Any, Any]:
        """(the parent's inputs, the reference's output on them, where the problem's check takes one);
        ``passing``: the inputs die with this call's check, so on the GPU they and the expected output may
        be the shape's graphs' tensors, which its next draw overwrites (graph_draws); kept or early ones
        are drawn and computed plainly."""
        device = self.check_device
        with torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext():
            if passing and self._graphs is not None:
                return self._graphs.draw(seeded)
            inputs = self.reference.generate_input(**seeded, device=device)
            expected = self.reference.ref_kernel(inputs) if self._takes_expected or synchronized else None
            if synchronized and device.type == "cuda":  # another thread reads them
                torch.cuda.synchronize(device)
        return inputs, expected if self._takes_expected else None

    def _expected(self, seeded: dict[str, Any], kept_key: tuple | None, drawing: Any, inputs: Any = None,
                  with_expected: bool = True) -> tuple[Any, Any]:
        """(the parent's inputs, the reference's output on them) for one seeded call: kept ones, ones
        computed early (``expect_early``), or drawn and computed now (queued on the GPU, not waited
        for: the check reads them). The expected output is left to the check where the problem's
        check takes none, or to a later call where ``with_expected`` is False (the inputs of a staged
        call, drawn before it); ``inputs``: those, already drawn."""
        if kept_key in self._kept:
            return self._kept[kept_key]
        key = _case_key(seeded)
        early = self._early.pop(key, None) if with_expected else self._early.get(key)
        if early is not None and early.exception() is None:
            inputs, expected = early.result()
        elif inputs is None and drawing is None and with_expected:
            inputs, expected = self._draw_and_reference(seeded, passing=kept_key is None)
        else:
            if inputs is None:
                inputs = drawing.result() if drawing else (
                    self.reference.generate_input(**seeded, device=self.check_device))
            expected = self.reference.ref_kernel(inputs) if self._takes_expected and with_expected else None
        if not with_expected:
            return inputs, None
        if kept_key is not None:
            self._kept[kept_key] = (inputs, expected)
        return inputs, expected


def _case_key(case: dict[str, Any]) -> tuple:
    """A case dict as a hashable key (its values may be lists: the grouped GEMM's m, n, k)."""
    return tuple(sorted((name, repr(value)) for name, value in case.items()))
