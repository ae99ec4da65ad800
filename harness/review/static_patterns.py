"""The static read's rules as data: which modules, names and words put a source in which flag class.

Why data: a rule is added or tightened here without touching the walkers (python_rules.py,
native_source.py). Names are canonical dotted names, after import aliases are resolved
(``import torch as t; t.cuda.Stream`` is ``torch.cuda.Stream``); a rule name matches itself and
anything below it (``ctypes`` matches ``ctypes.CDLL``).
"""

from __future__ import annotations

import re

from harness.review.findings import FlagClass

IMPORTED_MODULES: dict[str, tuple[FlagClass, str]] = {
    "ctypes": (FlagClass.NATIVE_REACH, "imports ctypes (native memory and C functions)"),
    "_ctypes": (FlagClass.NATIVE_REACH, "imports _ctypes"),
    "cffi": (FlagClass.NATIVE_REACH, "imports cffi (native memory and C functions)"),
    "mmap": (FlagClass.NATIVE_REACH, "imports mmap"),
    "gc": (FlagClass.PYTHON_REACH, "imports gc (every live object, the harness's too)"),
    "inspect": (FlagClass.PYTHON_REACH, "imports inspect (frames and the callers' state)"),
    "builtins": (FlagClass.PYTHON_REACH, "imports builtins"),
    "harness": (FlagClass.PYTHON_REACH, "imports the harness's own modules"),
    "signal": (FlagClass.PROCESS_TRICKS, "imports signal"),
    "subprocess": (FlagClass.PROCESS_TRICKS, "imports subprocess"),
    "multiprocessing": (FlagClass.PROCESS_TRICKS, "imports multiprocessing"),
    "_thread": (FlagClass.PROCESS_TRICKS, "imports _thread"),
    "base64": (FlagClass.OBFUSCATION, "imports base64 (an encoded blob)"),
    "binascii": (FlagClass.OBFUSCATION, "imports binascii (an encoded blob)"),
    "codecs": (FlagClass.OBFUSCATION, "imports codecs (rot13 and other encodings)"),
    "zlib": (FlagClass.OBFUSCATION, "imports zlib (a compressed blob)"),
    "lzma": (FlagClass.OBFUSCATION, "imports lzma (a compressed blob)"),
    "bz2": (FlagClass.OBFUSCATION, "imports bz2 (a compressed blob)"),
    "gzip": (FlagClass.OBFUSCATION, "imports gzip (a compressed blob)"),
    "marshal": (FlagClass.OBFUSCATION, "imports marshal (code objects from bytes)"),
    "pickle": (FlagClass.OBFUSCATION, "imports pickle (objects from bytes)"),
}
"""Modules whose import alone is a flag (a kernel submission has no honest use for them)."""

USED_NAMES: dict[str, tuple[FlagClass, str]] = {
    "os.fork": (FlagClass.PROCESS_TRICKS, "forks the worker"),
    "os.forkpty": (FlagClass.PROCESS_TRICKS, "forks the worker"),
    "os.setsid": (FlagClass.PROCESS_TRICKS, "leaves the worker's session"),
    "os.setpgid": (FlagClass.PROCESS_TRICKS, "leaves the worker's process group"),
    "os.setpgrp": (FlagClass.PROCESS_TRICKS, "leaves the worker's process group"),
    "os.kill": (FlagClass.PROCESS_TRICKS, "sends a signal"),
    "os.killpg": (FlagClass.PROCESS_TRICKS, "sends a signal"),
    "os.system": (FlagClass.PROCESS_TRICKS, "runs a shell command"),
    "os.popen": (FlagClass.PROCESS_TRICKS, "runs a shell command"),
    "os.execv": (FlagClass.PROCESS_TRICKS, "replaces the process"),
    "os.execve": (FlagClass.PROCESS_TRICKS, "replaces the process"),
    "os.execvp": (FlagClass.PROCESS_TRICKS, "replaces the process"),
    "os.execl": (FlagClass.PROCESS_TRICKS, "replaces the process"),
    "os.spawnv": (FlagClass.PROCESS_TRICKS, "starts a process"),
    "os.posix_spawn": (FlagClass.PROCESS_TRICKS, "starts a process"),
    "os.dup2": (FlagClass.PROCESS_TRICKS, "rewires a file descriptor"),
    "os.register_at_fork": (FlagClass.PROCESS_TRICKS, "hooks fork"),
    "threading.Thread": (FlagClass.PROCESS_TRICKS, "starts a thread"),
    "threading.Timer": (FlagClass.PROCESS_TRICKS, "starts a timer thread"),
    "concurrent.futures": (FlagClass.PROCESS_TRICKS, "starts a pool of threads or processes"),
    "threading.settrace": (FlagClass.PYTHON_REACH, "traces every thread"),
    "threading.setprofile": (FlagClass.PYTHON_REACH, "profiles every thread"),
    "sys.settrace": (FlagClass.PYTHON_REACH, "installs a tracer (sees the harness's frames)"),
    "sys.setprofile": (FlagClass.PYTHON_REACH, "installs a profiler hook (sees the harness's calls)"),
    "sys._getframe": (FlagClass.PYTHON_REACH, "walks the call stack"),
    "sys._current_frames": (FlagClass.PYTHON_REACH, "reads every thread's frames"),
    "sys.modules": (FlagClass.PYTHON_REACH, "reaches loaded modules through sys.modules"),
    "sys.meta_path": (FlagClass.PYTHON_REACH, "hooks the import system"),
    "sys.path_hooks": (FlagClass.PYTHON_REACH, "hooks the import system"),
    "sys.addaudithook": (FlagClass.PYTHON_REACH, "hooks audit events"),
    "importlib.reload": (FlagClass.PYTHON_REACH, "reloads a module"),
    "torch.ops.load_library": (FlagClass.NATIVE_REACH, "loads a native library"),
    "torch.classes.load_library": (FlagClass.NATIVE_REACH, "loads a native library"),
    "torch.cuda.Stream": (FlagClass.STREAMS_GRAPHS, "creates a CUDA stream"),
    "torch.cuda.ExternalStream": (FlagClass.STREAMS_GRAPHS, "wraps a foreign CUDA stream"),
    "torch.cuda.stream": (FlagClass.STREAMS_GRAPHS, "switches the current stream"),
    "torch.cuda.StreamContext": (FlagClass.STREAMS_GRAPHS, "switches the current stream"),
    "torch.cuda.set_stream": (FlagClass.STREAMS_GRAPHS, "switches the current stream"),
    "torch.cuda.graph": (FlagClass.STREAMS_GRAPHS, "captures a CUDA graph"),
    "torch.cuda.graphs": (FlagClass.STREAMS_GRAPHS, "captures a CUDA graph"),
    "torch.cuda.CUDAGraph": (FlagClass.STREAMS_GRAPHS, "captures a CUDA graph"),
    "torch.cuda.make_graphed_callables": (FlagClass.STREAMS_GRAPHS, "captures a CUDA graph"),
    "torch.Stream": (FlagClass.STREAMS_GRAPHS, "creates a stream"),
    "cupy.cuda.Stream": (FlagClass.STREAMS_GRAPHS, "creates a CUDA stream"),
    "cupy.cuda.Graph": (FlagClass.STREAMS_GRAPHS, "captures a CUDA graph"),
    "exec": (FlagClass.OBFUSCATION, "executes text as code"),
    "eval": (FlagClass.OBFUSCATION, "evaluates text as code"),
    "compile": (FlagClass.OBFUSCATION, "compiles text to code"),
    "builtins.exec": (FlagClass.OBFUSCATION, "executes text as code"),
    "builtins.eval": (FlagClass.OBFUSCATION, "evaluates text as code"),
    "chr": (FlagClass.OBFUSCATION, "builds text from code points"),
    "bytes.fromhex": (FlagClass.OBFUSCATION, "decodes a hex blob"),
    "globals": (FlagClass.PYTHON_REACH, "reaches the module's globals by name"),
    "vars": (FlagClass.PYTHON_REACH, "reaches an object's namespace"),
}
"""Names (called or only referred to) that are a flag wherever they appear."""

ATTRIBUTES: dict[str, tuple[FlagClass, str]] = {
    "mprotect": (FlagClass.NATIVE_REACH, "changes memory protection (mprotect)"),
    "dlopen": (FlagClass.NATIVE_REACH, "opens a native library (dlopen)"),
    "dlsym": (FlagClass.NATIVE_REACH, "looks a native symbol up (dlsym)"),
    "f_back": (FlagClass.PYTHON_REACH, "walks to the caller's frame"),
    "f_globals": (FlagClass.PYTHON_REACH, "reads a frame's globals"),
    "f_locals": (FlagClass.PYTHON_REACH, "reads a frame's locals"),
    "tb_frame": (FlagClass.PYTHON_REACH, "reaches a frame through a traceback"),
    "gi_frame": (FlagClass.PYTHON_REACH, "reaches a generator's frame"),
    "cr_frame": (FlagClass.PYTHON_REACH, "reaches a coroutine's frame"),
    "__subclasses__": (FlagClass.PYTHON_REACH, "walks the class hierarchy"),
    "__globals__": (FlagClass.PYTHON_REACH, "reaches a function's globals"),
    "__builtins__": (FlagClass.PYTHON_REACH, "reaches the builtins"),
    "__code__": (FlagClass.PYTHON_REACH, "reaches or replaces a function's code"),
    "get_stream_from_pool": (FlagClass.STREAMS_GRAPHS, "takes a stream from the pool"),
    "getStreamFromPool": (FlagClass.STREAMS_GRAPHS, "takes a stream from the pool"),
    "wait_stream": (FlagClass.STREAMS_GRAPHS, "orders work across streams"),
}
"""Attribute names that are a flag on any object (the object is rarely known statically)."""

L2_WORDS = ("accesspolicywindow", "persistingl2", "hitratio", "hitprop", "missprop", "accesspropertypersisting",
            "resetpersistingl2cache", "limitpersisting")
"""Persisting-L2 words, matched in identifiers, strings and inline source with case and underscores dropped."""

WATCHED = re.compile(
    r"\bcu(?:da)?[A-Z]\w+|\bdlopen|\bdlsym|mprotect|/proc/|PyEval_\w+|_getframe|f_back|settrace|setprofile"
    r"|get_objects|elapsed_time|perf_counter|synchronize|data_ptr|ctypes|CDLL|accessPolicyWindow|PersistingL2"
    r"|\bStream\b|\bEvent\b|CUDAGraph|__import__|\bexec\b|\beval\b|\bsys\.modules|\bharness\b|getStreamFromPool"
)
"""Names that text is assembled to hide: a string built from parts that spells one of these, where no part
does, is obfuscation. Also the names token-pasted in inline C/C++."""

NATIVE_TEXT: tuple[tuple[re.Pattern[str], FlagClass, str], ...] = tuple(
    (re.compile(pattern), klass, what) for pattern, klass, what in (
        (r"\bdlopen\b|\bdlsym\b", FlagClass.NATIVE_REACH, "inline source opens native symbols"),
        (r"\bmprotect\b", FlagClass.NATIVE_REACH, "inline source changes memory protection"),
        (r"/proc/", FlagClass.NATIVE_REACH, "inline source reads /proc"),
        (r"\bcuGetProcAddress\w*|cudaGetDriverEntryPoint\w*", FlagClass.NATIVE_REACH,
         "inline source looks driver entry points up"),
        (r"\bfork\s*\(|\bsetsid\s*\(|\bkill\s*\(|\bsignal\s*\(|\bsigaction\b|\bpthread_create\b|std::thread"
         r"|\bexecv\w*\s*\(|\bsystem\s*\(", FlagClass.PROCESS_TRICKS, "inline source starts processes or threads"),
        (r"PyEval_Set(?:Profile|Trace)|PyEval_GetFrame|PyFrame_\w+|PyGC_\w+|PyImport_GetModuleDict",
         FlagClass.PYTHON_REACH, "inline source reaches the interpreter's state"),
        (r"\bcu(?:da)?StreamCreate\w*|getStreamFromPool|setCurrentCUDAStream|cu(?:da)?StreamBeginCapture\w*"
         r"|\bcu(?:da)?Graph\w+", FlagClass.STREAMS_GRAPHS, "inline source creates streams or graphs"),
        (r"accessPolicyWindow|PersistingL2|PERSISTING_L2|hitRatio|hitProp|missProp|AccessPropertyPersisting",
         FlagClass.PERSISTING_L2, "inline source sets a persisting-L2 window or limit"),
    ))
"""Rules over inline C/C++/CUDA source (load_inline, cupy RawKernel, any string that reads as C)."""

INLINE_SOURCE = re.compile(r"#\s*include|#\s*define|__global__|__device__|extern\s+\"C\"|\btorch::|\bat::"
                           r"|PYBIND11_MODULE|<<<|\bcudaStream_t\b|\bvoid\s+\w+\s*\(")
"""A string that reads as C/C++/CUDA source, wherever it is passed."""

INLINE_BUILDERS = ("load_inline", "RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel", "compile_source")
"""Callables whose string arguments are C/C++/CUDA source (torch.utils.cpp_extension, cupy)."""

BLOB_HEADERS = (b"x\x9c", b"x\xda", b"x\x01", b"\xfd7zXZ", b"BZh", b"\x1f\x8b", b"\x80\x04\x95", b"\xe3\x00")
"""Leading bytes of zlib, lzma, bz2, gzip, pickle and marshalled code objects."""

BASE64_BLOB = re.compile(r"^[A-Za-z0-9+/=\n]{200,}$")
"""A long string of only the base64 alphabet: an encoded blob."""

DECODERS = ("b64decode", "b32decode", "b16decode", "a85decode", "b85decode", "decodebytes", "decompress",
            "unhexlify", "loads")
"""Attribute calls that turn a blob back into data or code (with an obfuscation import beside them)."""
