"""harness.judge.verdict.call_checker: a case listed twice is drawn once, and every output is still checked."""

from __future__ import annotations

import sys
import types
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from harness.contract.results import Status
from harness.judge.verdict.call_checker import CallChecker, _case_key
from harness.judge.worker_link.call_output import CallOutput
from harness.judge.worker_link.worker_channel import WorkerFailure
from problems.shared import blockscaled as bs

MODULE = "fake_problem_for_call_checker"


@pytest.fixture
def counted(monkeypatch):
    """A problem whose draws and references are counted: inputs (seed,), expected seed * 2."""
    counts = {"draws": 0, "references": 0}

    def generate_input(n: int, seed: int, device: str = "cpu"):
        counts["draws"] += 1
        return (torch.full((n,), float(seed)),)

    def ref_kernel(data):
        counts["references"] += 1
        return data[0] * 2

    module = types.SimpleNamespace(generate_input=generate_input, ref_kernel=ref_kernel,
                                   check_implementation=bs.make_checker(ref_kernel, bs.Tolerance(0.0, 0.0)))
    monkeypatch.setitem(sys.modules, MODULE, module)
    return counts


class Session:
    """Answers every call with the right output, or a wrong one where told."""

    def __init__(self, wrong: set[int] = frozenset()) -> None:
        self.wrong, self.calls = wrong, 0

    def call(self, seeded, sleep_us, stage, timeout_s, plain, buffers, answered=None, staged=None, drawn_seed=None,
             answer_early=False):
        self.calls += 1
        value = seeded["seed"] * 2 + (1 if self.calls in self.wrong else 0)
        return CallOutput(time_us=1.0, host_us=1.0, output=torch.full((seeded["n"],), float(value)), unfinished=False)


def checker() -> CallChecker:
    task = types.SimpleNamespace(reference_module=MODULE)
    return CallChecker(task, secret=None, check_device=torch.device("cpu"), plain=True)


def test_a_case_listed_twice_is_drawn_once_per_seed(counted):
    shared, alone = {"n": 4, "seed": 3}, {"n": 8, "seed": 3}
    made = checker()
    made.share_draws([shared, alone, dict(shared)], calls=2)
    session = Session()
    for index in (0, 1):  # the test's calls, then the benchmark's first calls of the same case
        made.checked_call(session, shared, index, 0.0, "the test", 1.0)
    for index in (0, 1, 2):
        made.checked_call(session, dict(shared), index, 0.0, "a warm-up call", 1.0)
    assert counted == {"draws": 3, "references": 3}  # seeds 0 and 1 once each, seed 2 (beyond `calls`) fresh
    for index in (0, 0):
        made.checked_call(session, alone, index, 0.0, "the test", 1.0)
    assert counted == {"draws": 5, "references": 5}  # a case listed once keeps nothing
    made.close()


def test_a_wrong_output_on_a_kept_draw_still_fails(counted):
    shared = {"n": 4, "seed": 3}
    made = checker()
    made.share_draws([shared, shared], calls=1)
    made.checked_call(Session(), shared, 0, 0.0, "the test", 1.0)
    with pytest.raises(WorkerFailure, match="a warm-up call"):
        made.checked_call(Session(wrong={1}), shared, 0, 0.0, "a warm-up call", 1.0)
    assert counted == {"draws": 1, "references": 1}
    made.close()


class SealingSession(Session):
    """A session as the real one orders a call: the reply, then ``answered``, then the MAC check
    (which fails where told); it records that order and the prefetches sent."""

    def __init__(self, wrong: set[int] = frozenset(), broken_seal: bool = False) -> None:
        super().__init__(wrong)
        self.broken_seal, self.events = broken_seal, []

    def prepare(self, case):
        self.events.append(("prepare", case["seed"]))

    def call(self, seeded, sleep_us, stage, timeout_s, plain, buffers, answered=None, staged=None, drawn_seed=None,
             answer_early=False):
        self.events.append(("reply", seeded["seed"]))
        output = super().call(seeded, sleep_us, stage, timeout_s, plain, buffers)
        answered()
        self.events.append(("seal", seeded["seed"]))
        if self.broken_seal:
            raise WorkerFailure(Status.REJECTED, "the MAC does not match")
        return output


def test_the_parents_draw_and_reference_run_between_the_reply_and_the_mac_check(counted):
    made = checker()
    session = SealingSession()
    seen = []
    reference = sys.modules[MODULE].ref_kernel
    sys.modules[MODULE].ref_kernel = lambda data: seen.append(list(session.events)) or reference(data)
    made.checked_call(session, {"n": 4, "seed": 3}, 0, 0.0, "a timed call", 1.0, prefetch=True)
    next_seed = made.call_seed({"seed": 3}, 1)
    assert seen == [[("reply", 3), ("prepare", next_seed)]]  # after the reply and the prefetch, before the seal
    assert session.events == [("reply", 3), ("prepare", next_seed), ("seal", 3)]
    assert counted == {"draws": 1, "references": 1} and {"draw", "check"} <= set(made.per_call()[0])
    made.close()


@pytest.mark.parametrize(("wrong", "broken_seal", "status"),
                         [({1}, False, Status.FAILED), (set(), True, Status.REJECTED)])
def test_a_wrong_output_or_a_broken_seal_still_ends_the_call(counted, wrong, broken_seal, status):
    made = checker()
    with pytest.raises(WorkerFailure) as failure:
        made.checked_call(SealingSession(wrong, broken_seal), {"n": 4, "seed": 3}, 0, 0.0, "a timed call", 1.0)
    assert failure.value.status == status
    made.close()


class StagingSession:
    """A sealed session with a staging file: records what the worker would have been sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[dict, object]] = []
        self.prepared: list[dict] = []

    def stages(self) -> bool:
        return True

    def draws(self, case) -> bool:
        return False

    def prepare(self, case):
        self.prepared.append(case)

    def call(self, case, sleep_us, stage, timeout_s, plain, buffers, answered=None, staged=None, drawn_seed=None,
             answer_early=False):
        self.sent.append((dict(case), staged))
        answered()
        return CallOutput(time_us=1.0, host_us=1.0, output=staged[0] * 2, unfinished=False)


class DrawingSession(StagingSession):
    """A sealed GPU session whose worker's core draws the inputs: records the seed the core would get."""

    def draws(self, case) -> bool:
        return True

    def call(self, case, sleep_us, stage, timeout_s, plain, buffers, answered=None, staged=None, drawn_seed=None,
             answer_early=False):
        self.sent.append((dict(case), (staged, drawn_seed)))
        answered()
        return CallOutput(time_us=1.0, host_us=1.0, output=torch.full((case["n"],), 2.0 * drawn_seed),
                          unfinished=False)


@pytest.mark.parametrize("secret", [99, None], ids=["ranked", "benchmark"])
def test_a_drawn_call_sends_the_public_case_and_the_seed_only_for_the_core(counted, secret):
    """On a GPU, ranked or in benchmark mode (issue 38: the same inputs timed): the worker's Python gets the
    public case, its core the call's seed (masked by the session); nothing is staged or prefetched, and the
    check runs on the parent's draw under that seed."""
    case = {"n": 4, "seed": 3}
    made = CallChecker(types.SimpleNamespace(reference_module=MODULE), secret=secret,
                       check_device=torch.device("cpu"), plain=False)
    session = DrawingSession()
    made.checked_call(session, case, 1, 0.0, "a timed call", 1.0, prefetch=True)
    (sent, (staged, drawn_seed)), = session.sent
    assert sent == case and staged is None and session.prepared == []
    assert drawn_seed == made.call_seed(case, 1) != 3
    assert counted == {"draws": 1, "references": 1}
    made.close()


def test_a_ranked_call_sends_the_parents_inputs_and_no_seed(counted):
    """Ranked: the worker gets the case's public seed and the parent's own draw (staged), for the call
    and for the prefetch of the next; the check runs on the same draw."""
    case = {"n": 4, "seed": 3}
    made = CallChecker(types.SimpleNamespace(reference_module=MODULE), secret=99, check_device=torch.device("cpu"),
                       plain=False)
    session = StagingSession()
    made.checked_call(session, case, 1, 0.0, "a timed call", 1.0, prefetch=True)
    (sent, staged), = session.sent
    assert sent == case and session.prepared == [case]
    assert torch.equal(staged[0], torch.full((4,), float(made.call_seed(case, 1)))) and made.call_seed(case, 1) != 3
    assert counted == {"draws": 1, "references": 1}
    made.close()


class OwnDraw(Session):
    """A sealed session that can draw (``draws``) or stage (``stages``) every shape: records what each call
    carried, and answers as a worker drawing the sent seed itself."""

    def __init__(self, draws: bool, stages: bool) -> None:
        super().__init__()
        self.can_draw, self.can_stage, self.sent, self.prepared = draws, stages, [], []
        self.prepare = self.prepared.append

    def draws(self, case) -> bool:
        return self.can_draw

    def stages(self) -> bool:
        return self.can_stage

    def call(self, case, sleep_us, stage, timeout_s, plain, buffers, answered=None, staged=None, drawn_seed=None,
             answer_early=False):
        self.sent.append((dict(case), staged, drawn_seed))
        return super().call(case, sleep_us, stage, timeout_s, plain, buffers)


@pytest.mark.parametrize("plain, secret, draws, stages", [(True, None, True, False), (False, None, False, True)],
                         ids=["sanitize-gpu", "benchmark-cpu"])
def test_a_call_the_worker_draws_itself(counted, plain, secret, draws, stages):
    """Sanitize mode (plain: no timer) is never drawn by the core, even where it could; staging exists for the
    secret seed, so benchmark mode on the CPU is never staged: the worker gets the seeded case."""
    case = {"n": 4, "seed": 3}
    made = CallChecker(types.SimpleNamespace(reference_module=MODULE), secret=secret,
                       check_device=torch.device("cpu"), plain=plain)
    session = OwnDraw(draws, stages)
    made.checked_call(session, case, 1, 0.0, "a call", 1.0, prefetch=not plain)
    seeded = {**case, "seed": made.call_seed(case, 1)}
    assert session.sent == [(seeded, None, None)]
    assert session.prepared == ([] if plain else [{**case, "seed": made.call_seed(case, 2)}])
    made.close()


class SendingAhead(DrawingSession):
    """A sealed GPU session whose core draws only ``drawn``'s shape: records each call sent ahead."""

    def __init__(self, drawn: dict) -> None:
        super().__init__()
        self.drawn = drawn

    def stages(self) -> bool:
        return False

    def draws(self, case) -> bool:
        return case["n"] == self.drawn["n"]

    def send_ahead(self, case, timeout_s, plain, buffers, drawn_seed):
        self.sent.append((dict(case), drawn_seed))
        return True


@pytest.mark.parametrize("secret", [99, None], ids=["ranked", "benchmark"])
def test_a_gpu_test_is_sent_ahead_drawn_only_where_its_shape_is_captured(counted, secret):
    """On a GPU only the timed shapes are drawn by the core: a test of another shape is sent ahead with its
    seed (untimed, it keeps the ordinary draw), one of a captured shape with the seed for the core; a ranked
    staging session (CPU) never sends one ahead."""
    made = CallChecker(types.SimpleNamespace(reference_module=MODULE), secret=secret,
                       check_device=torch.device("cpu"), plain=False)
    captured, other = {"n": 4, "seed": 3}, {"n": 2, "seed": 3}
    session = SendingAhead(captured)
    assert made.send_ahead(session, other, 1.0) and made.send_ahead(session, captured, 1.0)
    assert session.sent == [({**other, "seed": made.call_seed(other, 0)}, None),
                            (captured, made.call_seed(captured, 0))]
    if secret is not None:
        assert not made.send_ahead(StagingSession(), other, 1.0)
    made.close()


class Graphs:
    """Stands in for the CUDA check device's GraphDraws: records the seeds drawn through it; its expected
    output is its own (the replayed reference's: no eager ref_kernel runs for it)."""

    def __init__(self) -> None:
        self.seeds: list[int] = []

    def draw(self, seeded):
        self.seeds.append(seeded["seed"])
        inputs = sys.modules[MODULE].generate_input(**seeded)
        return inputs, inputs[0] * 2


def test_only_inputs_that_die_with_their_call_come_from_the_shapes_graph(counted):
    """A graph's tensors are overwritten by its next replay: inputs kept for a later call (share_draws) or
    computed ahead on another thread (expect_early) are drawn plainly; the others may replay the graph."""
    shared, alone = {"n": 4, "seed": 3}, {"n": 8, "seed": 5}
    made = checker()
    made._graphs = graphs = Graphs()
    made.share_draws([shared, shared, alone], calls=1)
    with ThreadPoolExecutor(max_workers=1) as pool:
        made.expect_early(alone, pool).result()
    made._expected({**alone, "seed": made.call_seed(alone, 0)}, None, None)  # takes the early draw
    assert graphs.seeds == [] and counted["draws"] == 1
    seeded = {**shared, "seed": made.call_seed(shared, 0)}
    made._expected(seeded, _case_key(seeded), None)  # kept
    assert graphs.seeds == [] and counted["draws"] == 2
    for index in (1, 2):
        seeded = {**alone, "seed": made.call_seed(alone, index)}
        made._expected(seeded, None, None)
    assert graphs.seeds == [made.call_seed(alone, 1), made.call_seed(alone, 2)]
    made.close()


def test_a_passing_calls_expected_output_comes_with_its_draw_from_the_shapes_graphs(counted):
    """On the GPU one replay yields the inputs and the expected output: no eager reference for that call."""
    made = checker()
    made._graphs = graphs = Graphs()
    seeded = {"n": 4, "seed": made.call_seed({"seed": 3}, 1)}
    inputs, expected = made._expected(seeded, None, None)
    assert graphs.seeds == [seeded["seed"]] and counted["references"] == 0
    assert torch.equal(expected, inputs[0] * 2)
    made.close()


@pytest.mark.parametrize("takes_expected", [True, False])
def test_a_cuda_checker_hands_its_graphs_the_reference_only_where_the_check_takes_an_expected_output(
        counted, monkeypatch, takes_expected):
    module = sys.modules[MODULE]
    if not takes_expected:
        monkeypatch.setattr(module, "check_implementation", lambda data, output: (True, ""))
    made = CallChecker(types.SimpleNamespace(reference_module=MODULE), secret=None,
                       check_device=torch.device("cuda", 0), plain=False)
    assert made._graphs.reference is (module.ref_kernel if takes_expected else None)
    made.close()
