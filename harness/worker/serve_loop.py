"""The process that runs one untrusted submission: its request loop. Started by
``harness.judge.worker_link.worker_process``; never imported by the trusted evaluator.

It is a plain executor: the parent sends one ``Call`` per call (case, seed, sleep; every message is
a record of ``harness.contract.messages``), the worker generates that call's inputs, runs
``custom_kernel`` under the timer and sends back the outputs as the caller saw them when the call
returned. Policy (how many calls, what is timed, the expected output, the verdict) stays in the
parent, out of the submission's reach.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from pathlib import Path
from typing import Any

import torch

from harness.contract import long_lived, messages, protocol
from harness.contract.messages import Call, Prepare, Profile, Recheck, Start
from harness.contract.results import Status
from harness.contract.tensor_tree import tensors_in
from harness.worker import (
    compile_ahead,
    contest_modules,
    extension_arch,
    outputs,
    sandbox,
    sealed_core,
    syscall_filter,
    timers,
    worker_args,
)
from harness.worker.drawn_inputs import DrawnInputs
from harness.worker.failures import SubmissionError, check_entry_point, classify
from harness.worker.integrity_guard import IntegrityGuard
from harness.worker.outputs import (
    active_modes,
    any_shares_memory,
    bytes_of,
    changed_any,
    operand_tensors,
    output_tensors,
    storage_spans,
)
from harness.worker.stack_dump import arm_stack_dump, stacks_before_the_limit


class Worker:
    def __init__(self, commands_fd: int, results_fd: int, key_fd: int) -> None:
        self.commands_fd = commands_fd
        self.results_fd = results_fd
        self.prepared: tuple[dict[str, Any], Any] | None = None  # (case, inputs) drawn ahead by a Prepare
        self.ahead_s: dict[str, float] = {}  # seconds before the Start request (compile_ahead.ahead_of_start)
        self.kept: Any = None  # a call's inputs kept (Call.buffers "keep") for the next call to refill
        self.key_fd = key_fd
        self.submission_file: str | None = None  # whose deepest line a failure's reason names
        self.stacks_fd: int | None = None  # a file of the parent's for every thread's stack at a time limit
        self.supervisor_fd: int | None = None  # the socket to the syscall supervisor, until the filter is on
        self.outputs_fd: int | None = None  # the parent's output file (large outputs go there, not the pipe)
        self.stage_fd: int | None = None  # the parent's staging file (ranked CPU calls' inputs, encrypted), read-only
        self.drawn = DrawnInputs()  # ranked GPU calls' draws, captured before the import
        self.channels = [commands_fd, results_fd]  # the fds the filter keeps dup2 and close off
        self.workdir = os.getcwd()  # the worker's own folder (NVFP4_WORKDIR), the one it always may write in
        self.steps: frozenset[str] = frozenset()  # the sandbox steps the parent chose
        self.cache_root: str | None = None  # the compile caches' root, writable until Start narrows it
        self.sandbox: dict[str, str] = {}
        self.received_at = 0.0  # perf_counter when the request being handled was read off the channel

    def send(self, reply: messages.Reply, tensors: list[torch.Tensor] | None = None,
             parts: list[tuple[dict[str, Any], bytes]] | None = None) -> None:
        protocol.send_message(self.results_fd, reply, tensors, parts)

    def start(self, request: Start) -> None:
        steps = timers.StepClock()
        self.device = torch.device(request.device)
        if self.device.type == "cuda":
            if self.device.index is None:  # torch.cuda.set_device rejects a device without an index
                self.device = torch.device("cuda", torch.cuda.current_device())
            torch.cuda.set_device(self.device)
            major, minor = torch.cuda.get_device_capability(self.device)
            extension_arch.install(10 * major + minor)  # sm_100a-only extensions fail before nvcc runs
            compile_ahead.load()  # the draws' kernels compiled before the file came, from the worker's folder
        self._own_caches(request.compile_cache)
        # The problem module (problems/<p>/reference.py: generate_input draws every call's inputs);
        # the contest's ``reference`` a submission imports is another module (contest_modules).
        self.reference = importlib.import_module(request.reference_module)
        contest_modules.install(self.reference, Path(request.task_py))
        steps.mark("reference")
        self.timer = self._make_timer(unsealed=request.unsealed)
        steps.mark("timer")
        if isinstance(self.timer, sealed_core.SealedTimer) and self.outputs_fd is not None:
            self.timer.map_outputs(self.outputs_fd)  # mapped before the syscall filter exists
        if isinstance(self.timer, sealed_core.SealedTimer) and self.device.type == "cuda":
            self.timer.signal_window(self.results_fd)
        if isinstance(self.timer, sealed_core.SealedTimer) and self.stage_fd is not None:
            self.timer.map_inputs(self.stage_fd)
        if request.snapshot_bytes:  # its descriptor follows the request; mapped before the import
            snapshot = protocol.receive_descriptor(self.commands_fd)
            if not isinstance(self.timer, sealed_core.SealedTimer) or self.device.type != "cuda":
                os.close(snapshot)
                raise SubmissionError(Status.HARNESS_FAULT, "a device snapshot sent to a worker without a GPU's core")
            try:
                self.timer.map_snapshot(snapshot, request.snapshot_bytes)
                self.sandbox["snapshot"] = f"{request.snapshot_bytes >> 20} MiB on the device"
            except RuntimeError as error:  # another GPU's memory, or no VMM here: outputs take the file
                self.sandbox["snapshot"] = f"not mapped ({error})"
        if request.draws:  # before the syscall filter and the import: the core keeps what no submission saw
            if not isinstance(self.timer, sealed_core.SealedTimer) or self.device.type != "cuda":
                raise SubmissionError(Status.HARNESS_FAULT, "drawn inputs asked of a worker without a GPU's core")
            self.drawn.capture(self.reference, request.draws, self.device, self.timer.add_draw,
                              self.timer.max_draws())
            steps.mark("draws")
        self.guard = IntegrityGuard(extra_modules=(sys.modules[__name__], timers, sealed_core, outputs, protocol,
                                                   messages))
        if self.supervisor_fd is not None:  # the last step before the submission's code exists
            self.sandbox["syscalls"] = syscall_filter.install(self.supervisor_fd, self.channels)
            self.supervisor_fd = None
            steps.mark("filter")
        submission_path = Path(request.submission)
        self.submission_file = str(submission_path)
        sys.path.insert(0, str(submission_path.parent))
        start = timers._perf_counter()
        if isinstance(self.timer, sealed_core.SealedTimer):  # the core imports it and keeps custom_kernel
            self.timer.bind(lambda path: contest_modules.load_module("submission", path), submission_path)
        else:
            contest_modules.load_module("submission", submission_path)
        kernel = getattr(sys.modules["submission"], "custom_kernel", None)
        check_entry_point(kernel, submission_path.name)
        self.kernel = kernel
        self._check_integrity("at import")
        sealed = isinstance(self.timer, sealed_core.SealedTimer)
        sandbox = {**self.sandbox, "core": self.timer.protection} if sealed else self.sandbox
        self.send(messages.Ready(import_s=timers._perf_counter() - start, timer=self.timer.method,
                                 persisting_l2_reset=self.timer.persisting_l2_reset, sealed=sealed,
                                 overhead_us=self.timer.overhead_us if sealed else None, sandbox=sandbox,
                                 steps_s={**steps.seconds, **self.ahead_s}, placements=self.drawn.counts(),
                                 streams=self.timer.streams if sealed else 1))

    def _own_caches(self, variables: dict[str, Any]) -> None:
        """The submission's owner's compile caches (Triton, inductor, load_inline), before the
        submission exists: the variables the compilers read, and writes narrowed from the caches'
        root (a blank worker's) to these folders. Inductor has not read its variable yet (importing
        torch loads neither compiler); Triton has compiled at most the harness's own draw kernels
        (compile_ahead), into the worker's folder, and reads its variable on every use."""
        os.environ.update({str(name): str(folder) for name, folder in variables.items()})
        if self.cache_root is not None and "landlock" in self.steps:
            owner = [os.path.commonpath([str(f) for f in variables.values()])] if variables else []
            self.sandbox["writes"] = sandbox.narrow_writes(self.workdir, owner)

    def _make_timer(self, unsealed: bool = False) -> sealed_core.SealedTimer | timers.CudaTimer | timers.CpuTimer:
        """The compiled core when built (it reads the key and closes its pipe), else a Python timer;
        ``unsealed`` (the parent's choice, for a worker under Nsight Compute): a plain event timer."""
        if unsealed:
            os.close(self.key_fd)
            return timers.CudaTimer(self.device, subtract_overhead=False) if self.device.type == "cuda" else (
                timers.CpuTimer())
        if sealed_core.sealed_available():
            try:
                return sealed_core.SealedTimer(self.key_fd, self.device)
            except RuntimeError as error:
                raise SubmissionError(Status.HARNESS_FAULT, f"the timing core could not start: {error}") from None
        os.close(self.key_fd)  # never read: the key does not enter this process
        return timers.CudaTimer(self.device) if self.device.type == "cuda" else timers.CpuTimer()

    def _check_integrity(self, when: str) -> None:
        changed = self.guard.violations()
        if changed:
            raise SubmissionError(Status.REJECTED, f"the submission replaced {', '.join(changed)} {when}")

    def prepare(self, request: Prepare) -> None:
        """Draw the next call's inputs now, while the parent checks the last output (neither is
        timed), and say where each one lies in device memory (sanitize mode names a faulty
        address from it even if the call kills the process)."""
        started = timers._perf_counter()
        data = self.reference.generate_input(**request.case, device=self.device)
        self.prepared = (request.case, data)
        placements = [{"index": i, "start": t.untyped_storage().data_ptr(), "nbytes": t.untyped_storage().nbytes(),
                       "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
                      for i, t in enumerate(tensors_in(data))]
        self.send(messages.Prepared(placements=placements,
                                    spent_ms={"draw": 1e3 * (timers._perf_counter() - started)}))

    def _inputs(self, case: dict[str, Any], buffers: str = "") -> Any:
        """The call's inputs: the prepared ones when they were drawn for this very case and seed.
        ``buffers``: "keep" keeps them for the next call; "refill" writes this call's fresh inputs
        into the kept ones and passes those same objects (a submission that caches its output by
        a tensor's data_ptr() or the tuple's id() then returns a stale answer, as it does on a GPU,
        whose allocator hands the same addresses back)."""
        prepared, self.prepared = self.prepared, None
        data = prepared[1] if prepared is not None and prepared[0] == case else None
        if data is None:
            data = self.reference.generate_input(**case, device=self.device)
        kept, self.kept = self.kept, None
        if buffers == "refill" and kept is not None:
            old, new = tensors_in(kept), tensors_in(data)
            if [(t.shape, t.dtype) for t in old] == [(t.shape, t.dtype) for t in new]:
                for target, fresh in zip(old, new):
                    target.copy_(fresh)
                data = kept
        if buffers == "keep":
            self.kept = data
        return data

    def call_plain(self, data: Any) -> None:
        """Sanitize mode: one plain call, no timer and no L2 flush, so that no kernel of the harness
        runs beside the submission's under compute-sanitizer. A failure ends the process by itself:
        the sanitizer wrapping it then completes its report (the parent would kill the whole
        process group on an error message)."""
        try:
            result = self.kernel(data)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            structure, outputs = output_tensors(result, self.device)
            self.send(messages.Output(time_us=0.0, host_us=0.0, structure=structure, unfinished=False), outputs)
        except BaseException as error:  # classified for the output log; the sanitizer's report says more
            print(f"harness worker: {classify(error, self.submission_file)}", flush=True)
            os._exit(3)

    def call(self, request: Call) -> None:
        clock = [timers._perf_counter()]  # the worker's own account of its time (the parent shows it only)
        sealed = isinstance(self.timer, sealed_core.SealedTimer)
        if (request.staged or request.sealed_seed) and not sealed:
            raise SubmissionError(Status.HARNESS_FAULT, "a ranked call reached a worker without the timing core")
        # A drawn call's tensors are its captured draw's, filled by the core inside the call: until then they
        # hold the graph pool's leftovers, so its operands are the ones its draw's eager run showed at Start.
        drawn = self.drawn.inputs(request.case, request.index) if request.sealed_seed else None
        data = self._inputs(request.case, request.buffers) if drawn is None else drawn.data
        if request.plain:
            self.call_plain(data)
            return
        operands = operand_tensors(data) if drawn is None else drawn.operands
        # A staged call's tensors hold the public draw until the core decrypts the parent's inputs into
        # them; the core itself checks afterwards that custom_kernel left the operands unchanged.
        staged = request.staged
        pristine = [] if staged or drawn is not None else [bytes_of(t).clone() for t in operands]
        clock.append(timers._perf_counter())
        if sealed:
            reply, parts, outputs = self._sealed_call(request, data, operands if staged else None,
                                                      None if drawn is None else drawn.slot)
            snapshot = None
        else:
            reply, snapshot, outputs = self._python_call(request, data)
            parts = None
        clock.append(timers._perf_counter())
        self._check_integrity("during a call")
        if any_shares_memory(outputs, storage_spans(operands) if drawn is None else drawn.spans):
            raise SubmissionError(Status.REJECTED, "custom_kernel returned one of its input tensors as output")
        if pristine and changed_any(pristine, operands):
            raise SubmissionError(Status.REJECTED, "custom_kernel modified its input tensors")
        clock.append(timers._perf_counter())
        spent_ms = {name: 1e3 * (end - begin) for name, begin, end in zip(("scan", "core", "checks"), clock, clock[1:])}
        if sealed:
            spent_ms.update({f"core.{phase}": ms for phase, ms in self.timer.last_phases().items()})
        # Two instants on the monotonic clock the parent shares: where the exchange's time outside this handler
        # went (messages.RECEIVED_AT).
        spent_ms[messages.RECEIVED_AT] = 1e3 * self.received_at
        spent_ms[messages.REPLYING_AT] = 1e3 * timers._perf_counter()
        self.send(dataclasses.replace(reply, spent_ms=spent_ms), snapshot, parts)

    def _sealed_call(self, request: Call, data: Any, operands: list[torch.Tensor] | None, draw: int | None
                     ) -> tuple[messages.Output, list, list[torch.Tensor]]:
        """The compiled core times the call and copies the outputs; this only forwards its answer.
        ``operands``: a staged call's (the core decrypts every tensor of ``data``, then checks these);
        ``draw``: a drawn call's slot (the core draws ``data`` under the call's masked seed)."""
        self.timer.use_stream(request.index)
        if draw is not None:
            answer = self.timer.time_call(data, request.index, 0, request.sleep_us, draw=draw,
                                          sealed=request.sealed_seed)
        elif operands is None:
            answer = self.timer.time_call(data, request.index, int(request.case["seed"]), request.sleep_us)
        else:
            tensors = tensors_in(data)
            kept = sum(1 << i for i, t in enumerate(tensors) if any(t is o for o in operands))
            answer = self.timer.time_call(data, request.index, 0, request.sleep_us, tensors, kept)
        if answer[0] != "ok":
            self._refused(*answer)
        _, time_us, host_us, unfinished, exposed, structure, views, mac, result, clock = answer
        parts = [protocol.storage_part(str(dtype), shape, stride, offset, payload)
                 for dtype, shape, stride, offset, payload in views]
        event_us, clock_us, gap_us, allowance_us = clock
        reply = messages.Output(time_us=time_us, host_us=host_us, structure=structure, unfinished=unfinished,
                                exposed=exposed, mac=mac, event_us=event_us, clock_us=clock_us, clock_gap_us=gap_us,
                                clock_allowance_us=allowance_us)
        return reply, parts, output_tensors(result, self.device)[1]

    def _refused(self, kind: str, result: Any, detail: str) -> None:
        """Raise the reason the compiled core gave for not signing a call (it sends no MAC for it)."""
        if kind == "bad_output":
            output_tensors(result, self.device)  # raises the reason
            raise SubmissionError(Status.FAILED, "custom_kernel returned something other than a tensor or list of "
                                  "tensors")
        if kind == "modes":
            modes = ", ".join(active_modes()) or "torch mode"
            raise SubmissionError(Status.REJECTED, f"a {modes} was active {detail}; it would run the submission's "
                                  "code inside the harness (after the timer stopped, or while the next inputs are "
                                  "drawn); exit every mode (torch.set_default_device included) before returning")
        if kind == "inputs":
            raise SubmissionError(Status.REJECTED, "custom_kernel modified its input tensors")
        if kind == "hooks":
            raise SubmissionError(Status.REJECTED, f"{detail} was set while the harness prepared or finished a call: "
                                  "it sees the inputs before the timer starts; the core refuses to time calls under it")
        raise SubmissionError(Status.HARNESS_FAULT, f"the timing core refused a call for an unknown reason: {kind}")

    def _python_call(self, request: Call, data: Any) -> tuple[messages.Output, list, list[torch.Tensor]]:
        """Unsealed timing (no compiled core): CPU runs and unranked GPU runs only."""
        result, elapsed_us, host_us = self.timer.time_call(lambda: self.kernel(data), request.sleep_us)
        modes = active_modes()
        if modes:
            raise SubmissionError(Status.REJECTED, f"custom_kernel left a {', '.join(modes)} active; it would run "
                                  "inside the harness after the timer stopped; exit every mode before returning")
        structure, outputs = output_tensors(result, self.device)
        # Queued right behind the end event: what the caller could read when the call returned.
        snapshot = [t.detach().clone() for t in outputs]
        time_us = elapsed_us()
        unfinished = any(not torch.equal(bytes_of(s), bytes_of(t)) for s, t in zip(snapshot, outputs))
        reply = messages.Output(time_us=time_us, host_us=host_us, structure=structure, unfinished=unfinished)
        return reply, snapshot, outputs

    def recheck(self, request: Recheck) -> None:
        """Measure the event overhead again (the parent compares it with the one in use)."""
        overhead_us, fresh_us, spread_us, mac = self.timer.recheck(request.nonce)
        self.send(messages.Rechecked(overhead_us=overhead_us, fresh_us=fresh_us, spread_us=spread_us, mac=mac))

    def profile(self, request: Profile) -> None:
        """One call under torch.profiler; the parent shows its per-kernel table. ``under_ncu``: one warm
        call (compile, autotune), then one call inside cudaProfilerStart/Stop, the one range that
        `ncu --profile-from-start off` profiles (harness.judge.passes.nsight)."""
        data = self._inputs(request.case)
        if request.under_ncu:
            on_gpu = self.device.type == "cuda"
            self.kernel(data)
            if on_gpu:
                torch.cuda.synchronize()
                torch.cuda.profiler.start()
            self.kernel(data)
            if on_gpu:
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
            self.send(messages.Profiled(table=""))
            return
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as profiler:
            self.kernel(data)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
        sort_key = "cuda_time_total" if self.device.type == "cuda" else "cpu_time_total"
        table = profiler.key_averages().table(sort_by=sort_key, row_limit=15)
        self.send(messages.Profiled(table=table))

    def serve(self) -> None:
        """Answer requests until a Stop. The handlers are looked up per request, on the instance."""
        while True:
            request = protocol.receive_message(self.commands_fd, messages.REQUESTS).message
            self.received_at = timers._perf_counter()
            # Looked up per request, as the worker's attributes stand then (the adversarial rows that
            # shadow them, p01 and s02/s03, must reach the parent's checks).
            handler = {Start: self.start, Prepare: self.prepare, Call: self.call, Profile: self.profile,
                       Recheck: self.recheck}.get(type(request))
            if handler is None:  # Stop
                return
            with stacks_before_the_limit(self.stacks_fd, getattr(request, "limit_s", None)):
                handler(request)


def main(argv: list[str], confinement: dict[str, str], entered: float) -> int:
    """Serve the parent's requests; ``confinement``: the sandbox report of ``harness.worker.boot``,
    which confined this process before this module (and torch) was imported; ``entered``: its
    perf_counter when it began."""
    worker = Worker(int(argv[0]), int(argv[1]), int(argv[2]))
    worker.stacks_fd = int(argv[4])
    arm_stack_dump(worker.stacks_fd)
    worker.channels.append(worker.stacks_fd)
    worker.supervisor_fd = worker_args.optional_fd(argv, 5)
    worker.cache_root = worker_args.cache_root(argv)
    # The parent's output file (harness.contract.output_file) and staging file (input_stage).
    worker.outputs_fd, worker.stage_fd = worker_args.optional_fd(argv, 8), worker_args.optional_fd(argv, 9)
    worker.channels += [fd for fd in (worker.outputs_fd, worker.stage_fd) if fd is not None]
    worker.workdir, worker.steps = worker_args.workdir(), worker_args.steps(argv)
    worker.sandbox = confinement  # travels in the Ready reply
    worker.ahead_s = compile_ahead.ahead_of_start(argv, entered)
    long_lived.release()  # the imports done (boot held collection off): one full collection over them
    try:
        worker.serve()
    except BaseException as error:  # everything a submission can raise ends as one classified line
        failure = classify(error, worker.submission_file)
        try:
            worker.send(messages.Error(status=failure.kind, message=str(failure), traceback=failure.traceback))
        except OSError:
            return 3
        return 2
    return 0

