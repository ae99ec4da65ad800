"""The process that runs one untrusted submission. Started by ``harness.runner``; never imported
by the trusted evaluator.

It is a plain executor: the parent sends one ``call`` message per call (case, seed, sleep), the
worker generates that call's inputs, runs ``custom_kernel`` under the timer and sends back the
outputs as the caller saw them when the call returned. Policy (how many calls, what is timed,
the expected output, the verdict) stays in the parent, out of the submission's reach.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import torch
from torch.utils._device import DeviceContext

from harness import contest_modules, extension_arch, protocol, sandbox, timing
from harness.integrity import IntegrityGuard


class SubmissionError(Exception):
    """Raised inside the worker to report a classified failure to the parent."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _flatten(tree: Any) -> list[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in _flatten(item)]
    return []


# Import names whose pip package is called something else.
PACKAGES = {"cutlass": "nvidia-cutlass-dsl (or pip install -e '.[cute]' in the harness checkout)",
            "cuda": "cuda-python", "yaml": "pyyaml", "cv2": "opencv-python"}


def _install_advice(module: str) -> str:
    top = module.split(".")[0]
    return f"pip install {PACKAGES.get(top, top)} where the harness runs, or drop the import"


def _classify(error: BaseException) -> SubmissionError:
    """Turn whatever the submission raised into one of the statuses the parent reports."""
    if isinstance(error, SubmissionError):
        return error
    text = f"{type(error).__name__}: {error}".strip()
    if isinstance(error, torch.OutOfMemoryError) or ("out of memory" in text.lower() and "cuda" in text.lower()):
        return SubmissionError("cuda_error", f"CUDA out of memory: {text.splitlines()[0]}")
    # The timing core's own driver calls fail with "CUDA driver: ... (700: an illegal memory access ...)"
    # when the submission's kernel faulted: the fault is the submission's, seen at the end event.
    if ("CUDA error" in text or "cudaError" in text or "CUDA driver:" in text
            or type(error).__name__ == "AcceleratorError"):
        return SubmissionError("cuda_error", text.splitlines()[0])
    if isinstance(error, SyntaxError):
        return SubmissionError("bad_input", f"syntax error in {Path(error.filename or '?').name} line {error.lineno}: "
                               f"{error.msg}; fix it and run again")
    if isinstance(error, ImportError) and error.name in contest_modules.CONTEST_MODULES:
        return SubmissionError("bad_input", f"{text.splitlines()[0]}: the contest runner's {error.name} module has "
                               "no such name; define it in your submission")
    if isinstance(error, ModuleNotFoundError):
        return SubmissionError("bad_input", f"{text}: {_install_advice(error.name or '')}")
    if isinstance(error, SystemExit):
        return SubmissionError("crashed", f"the submission called sys.exit({error.code!r})")
    if isinstance(error, MemoryError):
        return SubmissionError("crashed", "MemoryError: the submission ran out of host memory")
    frames = traceback.extract_tb(error.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return SubmissionError("crashed", f"{text.splitlines()[0] if text else type(error).__name__}{where}")


def _dense_on(device: torch.device, tensors: list[torch.Tensor]) -> None:
    """Raise unless every output is a dense tensor on the run's device (the core copies raw storage:
    a sparse tensor has none it can read, a meta tensor no memory at all)."""
    for tensor in tensors:
        if tensor.layout != torch.strided:
            raise SubmissionError("failed", f"custom_kernel returned a tensor of layout {tensor.layout}; return a "
                                  "dense (strided) tensor")
        if tensor.device.type != device.type:
            raise SubmissionError("failed", f"custom_kernel returned a tensor on {tensor.device.type}; return it on "
                                  f"{device.type}, where its inputs are")


def _output_tensors(result: Any, device: torch.device) -> tuple[str, list[torch.Tensor]]:
    """('tensor' | 'list', tensors) for a well-formed output; raise for anything else.

    Only exact ``torch.Tensor``, ``list`` and ``tuple`` objects pass, checked by type before
    anything touches them: a subclass's methods (``__torch_function__``, ``__iter__``) would run
    the submission's code inside the harness, after the timer stopped (deferred work).
    """
    if type(result) in (list, tuple):
        items = list(result)  # an exact list or tuple: iterating it runs no submission code
    elif isinstance(result, (list, tuple)):
        raise SubmissionError("rejected", f"custom_kernel returned a {type(result).__name__}, a list/tuple subclass "
                              "whose methods could do work after the timer stopped; return a plain list")
    else:
        items = [result]
    for item in items:
        if isinstance(item, torch.Tensor) and type(item) is not torch.Tensor:
            raise SubmissionError("rejected", f"custom_kernel returned a {type(item).__name__}, a torch.Tensor "
                                  "subclass whose methods could do work after the timer stopped; return a plain "
                                  "torch.Tensor")
    if type(result) is torch.Tensor:
        _dense_on(device, [result])
        return "tensor", [result]
    if type(result) in (list, tuple) and all(type(t) is torch.Tensor for t in items):
        _dense_on(device, items)
        return "list", items
    kind = type(result).__name__
    if type(result) in (list, tuple):
        kind = f"a {kind} holding " + ", ".join(sorted({type(t).__name__ for t in items}))
    raise SubmissionError("failed", f"custom_kernel returned {kind}, expected a tensor or a list of tensors")


def _check_entry_point(kernel: Any, file_name: str) -> None:
    """custom_kernel must be a function that takes the data tuple as its one argument (a plain check
    for a clear message at import, not a guard)."""
    if kernel is None:
        raise SubmissionError("bad_input", f"{file_name} defines no custom_kernel(data) function")
    if not callable(kernel):
        raise SubmissionError("bad_input", f"{file_name}: custom_kernel is a {type(kernel).__name__}, not a function; "
                              "define def custom_kernel(data)")
    try:
        signature = inspect.signature(kernel)
    except (TypeError, ValueError):  # no Python signature (a builtin): the first call will tell
        return
    try:
        signature.bind(None)
    except TypeError:
        raise SubmissionError("bad_input", f"{file_name}: custom_kernel{signature} must take one argument, the data "
                              "tuple: define def custom_kernel(data)") from None


def _active_modes() -> list[str]:
    """Torch function / dispatch modes left active (a default-device context excepted).

    A mode runs on every torch call anyone makes, the harness's copy of the output included: it
    would do the submission's work after the timer stopped.
    """
    modes = [torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())]
    names = [f"TorchFunctionMode {type(m).__name__}" for m in modes if type(m) is not DeviceContext]
    if torch._C._len_torch_dispatch_stack():
        names.append("TorchDispatchMode")
    return names


def _shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    a_start, b_start = a.untyped_storage().data_ptr(), b.untyped_storage().data_ptr()
    a_end, b_end = a_start + a.untyped_storage().nbytes(), b_start + b.untyped_storage().nbytes()
    return a_start < b_end and b_start < a_end


def _bytes_of(t: torch.Tensor) -> torch.Tensor:
    """Raw bytes of a tensor: compares NaNs and fp4/fp8 data exactly, on any device."""
    return t.detach().contiguous().view(-1).view(torch.uint8)


class Worker:
    def __init__(self, commands_fd: int, results_fd: int, key_fd: int) -> None:
        self.commands_fd = commands_fd
        self.results_fd = results_fd
        self.prepared: tuple[dict[str, Any], Any] | None = None  # (case, inputs) drawn ahead by 'prepare'
        self.key_fd = key_fd

    def send(self, header: dict[str, Any], tensors: list[torch.Tensor] | None = None,
             parts: list[tuple[dict[str, Any], bytes]] | None = None) -> None:
        protocol.send(self.results_fd, header, tensors, parts)

    def start(self, request: dict[str, Any]) -> None:
        self.device = torch.device(request["device"])
        if self.device.type == "cuda":
            if self.device.index is None:  # torch.cuda.set_device rejects a device without an index
                self.device = torch.device("cuda", torch.cuda.current_device())
            torch.cuda.set_device(self.device)
            major, minor = torch.cuda.get_device_capability(self.device)
            extension_arch.install(10 * major + minor)  # sm_100a-only extensions fail before nvcc runs
        self.reference = importlib.import_module(request["reference_module"])
        contest_modules.install(self.reference, Path(request["task_py"]))
        self.timer = self._make_timer()
        self.guard = IntegrityGuard(extra_modules=(sys.modules[__name__], timing, protocol))
        submission_path = Path(request["submission"])
        sys.path.insert(0, str(submission_path.parent))
        start = timing._perf_counter()
        if isinstance(self.timer, timing.SealedTimer):  # the core imports it and keeps custom_kernel
            self.timer.bind(lambda path: contest_modules.load_module("submission", path), submission_path)
        else:
            contest_modules.load_module("submission", submission_path)
        kernel = getattr(sys.modules["submission"], "custom_kernel", None)
        _check_entry_point(kernel, submission_path.name)
        self.kernel = kernel
        self._check_integrity("at import")
        sealed = isinstance(self.timer, timing.SealedTimer)
        self.send({"op": "ready", "import_s": timing._perf_counter() - start, "timer": self.timer.method,
                   "persisting_l2_reset": self.timer.persisting_l2_reset, "sealed": sealed,
                   "overhead_us": self.timer.overhead_us if sealed else None, "sandbox": self.sandbox})

    def _make_timer(self) -> timing.SealedTimer | timing.CudaTimer | timing.CpuTimer:
        """The compiled core when built (it reads the key and closes its pipe), else a Python timer."""
        if timing.sealed_available():
            try:
                return timing.SealedTimer(self.key_fd, self.device)
            except RuntimeError as error:
                raise SubmissionError("harness_fault", f"the timing core could not start: {error}") from None
        os.close(self.key_fd)  # never read: the key does not enter this process
        return timing.CudaTimer(self.device) if self.device.type == "cuda" else timing.CpuTimer()

    def _check_integrity(self, when: str) -> None:
        changed = self.guard.violations()
        if changed:
            raise SubmissionError("rejected", f"the submission replaced {', '.join(changed)} {when}")

    def prepare(self, request: dict[str, Any]) -> None:
        """Draw the next call's inputs now, while the parent checks the last output (neither is
        timed), and say where each one lies in device memory (sanitize mode names a faulty
        address from it even if the call kills the process)."""
        data = self.reference.generate_input(**request["case"], device=self.device)
        self.prepared = (request["case"], data)
        placements = [{"index": i, "start": t.untyped_storage().data_ptr(), "nbytes": t.untyped_storage().nbytes(),
                       "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
                      for i, t in enumerate(_flatten(data))]
        self.send({"op": "prepared", "placements": placements})

    def _inputs(self, case: dict[str, Any]) -> Any:
        """The call's inputs: the prepared ones when they were drawn for this very case and seed."""
        prepared, self.prepared = self.prepared, None
        if prepared is not None and prepared[0] == case:
            return prepared[1]
        return self.reference.generate_input(**case, device=self.device)

    def call_plain(self, data: Any) -> None:
        """Sanitize mode: one plain call, no timer and no L2 flush, so that no kernel of the harness
        runs beside the submission's under compute-sanitizer. A failure ends the process by itself:
        the sanitizer wrapping it then completes its report (the parent would kill the whole
        process group on an error message)."""
        try:
            result = self.kernel(data)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            structure, outputs = _output_tensors(result, self.device)
            self.send({"op": "output", "time_us": 0.0, "host_us": 0.0, "structure": structure, "unfinished": False},
                      outputs)
        except BaseException as error:  # classified for the output log; the sanitizer's report says more
            print(f"harness worker: {_classify(error)}", flush=True)
            os._exit(3)

    def call(self, request: dict[str, Any]) -> None:
        data = self._inputs(request["case"])
        if request.get("plain"):
            self.call_plain(data)
            return
        operands = [t for t in _flatten(data) if t.dtype != torch.float16]  # fp16 tensors are output buffers
        pristine = [_bytes_of(t).clone() for t in operands]
        if request.get("profile"):
            self.send_profile(data)
            return
        if isinstance(self.timer, timing.SealedTimer):
            header, parts, outputs = self._sealed_call(request, data)
            snapshot = None
        else:
            header, snapshot, outputs = self._python_call(request, data)
            parts = None
        self._check_integrity("during a call")
        for out in outputs:
            if any(_shares_memory(out, t) for t in operands):
                raise SubmissionError("rejected", "custom_kernel returned one of its input tensors as output")
        if any(not torch.equal(before, _bytes_of(t)) for before, t in zip(pristine, operands)):
            raise SubmissionError("rejected", "custom_kernel modified its input tensors")
        self.send(header, snapshot, parts)

    def _sealed_call(self, request: dict[str, Any], data: Any) -> tuple[dict[str, Any], list, list[torch.Tensor]]:
        """The compiled core times the call and copies the outputs; this only forwards its answer."""
        answer = self.timer.time_call(data, int(request["index"]), int(request["case"]["seed"]), request["sleep_us"])
        if answer[0] == "bad_output":
            _output_tensors(answer[1], self.device)  # raises the reason
            raise SubmissionError("failed", "custom_kernel returned something other than a tensor or list of tensors")
        if answer[0] == "modes":
            raise SubmissionError("rejected", f"custom_kernel left a {', '.join(_active_modes()) or 'torch mode'} "
                                  "active; it would run inside the harness after the timer stopped; exit every "
                                  "mode before returning")
        _, time_us, host_us, unfinished, exposed, structure, views, mac, result = answer
        parts = [(protocol.storage_entry(str(dtype), shape, stride, offset, payload), payload)
                 for dtype, shape, stride, offset, payload in views]
        header = {"op": "output", "time_us": time_us, "host_us": host_us, "structure": structure,
                  "unfinished": unfinished, "exposed": exposed, "mac": mac.hex()}
        return header, parts, _output_tensors(result, self.device)[1]

    def _python_call(self, request: dict[str, Any], data: Any) -> tuple[dict[str, Any], list, list[torch.Tensor]]:
        """Unsealed timing (no compiled core): CPU runs and unranked GPU runs only."""
        result, elapsed_us, host_us = self.timer.time_call(lambda: self.kernel(data), request["sleep_us"])
        modes = _active_modes()
        if modes:
            raise SubmissionError("rejected", f"custom_kernel left a {', '.join(modes)} active; it would run inside "
                                  "the harness after the timer stopped; exit every mode before returning")
        structure, outputs = _output_tensors(result, self.device)
        # Queued right behind the end event: what the caller could read when the call returned.
        snapshot = [t.detach().clone() for t in outputs]
        time_us = elapsed_us()
        unfinished = any(not torch.equal(_bytes_of(s), _bytes_of(t)) for s, t in zip(snapshot, outputs))
        header = {"op": "output", "time_us": time_us, "host_us": host_us, "structure": structure,
                  "unfinished": unfinished}
        return header, snapshot, outputs

    def recheck(self, request: dict[str, Any]) -> None:
        """Measure the event overhead again (the parent compares it with the one in use)."""
        overhead_us, fresh_us, spread_us, mac = self.timer.recheck(bytes.fromhex(request["nonce"]))
        self.send({"op": "recheck", "overhead_us": overhead_us, "fresh_us": fresh_us, "spread_us": spread_us,
                   "mac": mac.hex()})

    def send_profile(self, data: Any) -> None:
        """One call under torch.profiler; the parent shows its per-kernel table."""
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        with torch.profiler.profile(activities=activities) as profiler:
            self.kernel(data)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
        sort_key = "cuda_time_total" if self.device.type == "cuda" else "cpu_time_total"
        table = profiler.key_averages().table(sort_by=sort_key, row_limit=15)
        self.send({"op": "profile", "table": table})

    def serve(self) -> None:
        while True:
            header, _ = protocol.receive(self.commands_fd)
            if header["op"] == "start":
                self.start(header)
            elif header["op"] == "prepare":
                self.prepare(header)
            elif header["op"] == "call":
                self.call(header)
            elif header["op"] == "recheck":
                self.recheck(header)
            else:
                return


def main(argv: list[str]) -> int:
    worker = Worker(int(argv[0]), int(argv[1]), int(argv[2]))
    # Confined before any submission code exists; the report travels in the 'ready' message.
    worker.sandbox = sandbox.in_worker(os.environ.get("NVFP4_WORKDIR", os.getcwd()), frozenset(argv[3].split(",")))
    try:
        worker.serve()
    except BaseException as error:  # everything a submission can raise ends as one classified line
        failure = _classify(error)
        try:
            worker.send({"op": "error", "kind": failure.kind, "message": str(failure)})
        except OSError:
            return 3
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
