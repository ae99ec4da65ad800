"""The static read: every flag class found in a planted file, none in any shipped submission, and
the three attacks kernelguard classified as valid (issue 39) found by our rules."""

from __future__ import annotations

from pathlib import Path

import kernelguard
import pytest

from harness.review import kernelguard_rules, static_read
from harness.review.findings import STATIC_CLASSES, FlagClass
from harness.review.source_tree import SourceFile, local_modules

REPO = Path(__file__).resolve().parents[2]
PLANTED = Path(__file__).resolve().parent / "planted"
SHIPPED = sorted((REPO / "submissions").rglob("*.py"))

CLASS_FILES = {
    FlagClass.NATIVE_REACH: "native_reach.py",
    FlagClass.PROCESS_TRICKS: "process_tricks.py",
    FlagClass.PYTHON_REACH: "python_reach.py",
    FlagClass.STREAMS_GRAPHS: "side_stream_in_sleep.py",
    FlagClass.PERSISTING_L2: "persisting_l2.py",
    FlagClass.MONKEYPATCH: "monkeypatch.py",
    FlagClass.POINTER_CACHE: "pointer_cache.py",
    FlagClass.OBFUSCATION: "obfuscation.py",
}
KERNELGUARD_MISSES = {  # issue 39: run over attacks that pass this harness, kernelguard called these valid
    "native_detour.py": FlagClass.NATIVE_REACH,  # a ctypes detour kept in a helper module the file imports
    "pointer_cache.py": FlagClass.POINTER_CACHE,  # an output cache keyed by data_ptr
    "side_stream_in_sleep.py": FlagClass.STREAMS_GRAPHS,  # a side stream started during the queued sleep
}


def read(name: str) -> static_read.StaticRead:
    return static_read.read_path(PLANTED / name, guard=kernelguard)


def test_every_static_class_has_a_planted_file():
    assert set(CLASS_FILES) == set(STATIC_CLASSES)


@pytest.mark.parametrize("klass", STATIC_CLASSES, ids=lambda k: k.value)
def test_each_class_is_found_in_its_planted_file(klass):
    flags = [f for f in read(CLASS_FILES[klass]).flags if f.klass == klass]
    assert flags, f"{CLASS_FILES[klass]}: no {klass.value} flag"
    assert all(f.file and f.evidence for f in flags)
    assert any(f.line for f in flags)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO / "submissions")))
def test_no_shipped_submission_is_flagged(path):
    found = static_read.read_path(path, guard=kernelguard)
    assert found.flags == [], "\n".join(f"{f.klass.value} {f.where} {f.evidence}" for f in found.flags)


@pytest.mark.parametrize(("name", "klass"), sorted(KERNELGUARD_MISSES.items()))
def test_what_kernelguard_misses_our_rules_find(name, klass):
    tree = read(name)
    sources = [PLANTED / file for file in tree.files]
    assert not any(kernelguard_rules.scan(kernelguard, p.read_text(), p.name) for p in sources)
    assert all(kernelguard.analyze_code(p.read_text(), compute_structural_hash=False)["classification"] != "hacked"
               for p in sources)
    assert any(f.klass == klass for f in tree.flags)


def test_the_detour_is_found_in_the_helper_the_submission_imports():
    found = read("native_detour.py")
    assert found.files == [str(PLANTED / "native_detour.py"), "_detour_native.py"]
    assert [(f.klass, f.file, f.line) for f in found.flags] == [
        (FlagClass.NATIVE_REACH, "_detour_native.py", line_of("_detour_native.py", "import ctypes"))]


def test_a_token_pasted_cuda_name_in_inline_source_is_spelled_out():
    flags = read("token_paste.py").flags
    pasted = [f for f in flags if f.klass == FlagClass.OBFUSCATION]
    assert [f.line for f in pasted] == [line_of("token_paste.py", "CALL3(cuda, Event, Record)(")]
    assert "'cudaEventRecord'" in pasted[0].evidence


def test_inline_cuda_is_read_line_by_line():
    flags = [f for f in read("persisting_l2.py").flags if f.klass == FlagClass.PERSISTING_L2]
    assert {f.line for f in flags} >= {line_of("persisting_l2.py", "cudaLimitPersistingL2CacheSize"),
                                       line_of("persisting_l2.py", "hitRatio")}
    assert any("accessPolicyWindow" in f.evidence for f in flags)


def test_names_assembled_from_parts_are_read_as_the_program_reads_them():
    evidence = [f.evidence for f in read("obfuscation.py").flags]
    assert any("spells 'Stream'" in e for e in evidence)
    assert any("executes text as code" in e for e in evidence)
    assert any("decodes a blob" in e for e in evidence)


def line_of(name: str, text: str) -> int:
    return next(n for n, line in enumerate((PLANTED / name).read_text().splitlines(), 1) if text in line)


def test_kernelguard_rules_count_under_our_classes_with_a_line():
    flags = [f for f in read("monkeypatch.py").flags if f.rule.startswith("kernelguard:")]
    patched = line_of("monkeypatch.py", "cuda.synchronize =")
    assert flags and all(f.klass == FlagClass.MONKEYPATCH and f.line == patched for f in flags)


def test_without_kernelguard_our_rules_run_and_the_review_says_so():
    found = static_read.read_path(PLANTED / "pointer_cache.py", guard=None)
    assert any(f.klass == FlagClass.POINTER_CACHE for f in found.flags)
    assert found.not_run == [static_read.KERNELGUARD_MISSING]


def test_a_file_that_does_not_parse_is_one_source_flag(tmp_path):
    (tmp_path / "broken.py").write_text("def custom_kernel(data:\n")
    flags = static_read.read_path(tmp_path / "broken.py").flags
    assert [(f.klass, f.line) for f in flags] == [(FlagClass.SOURCE, 1)]


def test_local_imports_are_followed_transitively_and_only_where_they_are(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "extra").mkdir()
    (tmp_path / "main.py").write_text("import torch\nimport first\nfrom pkg import inner\nfrom task import input_t\n")
    (tmp_path / "first.py").write_text("import second\n")
    (tmp_path / "second.py").write_text("import gc\n")
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "inner.py").write_text("from . import sibling\nimport elsewhere\n")
    (tmp_path / "pkg" / "sibling.py").write_text("")
    (tmp_path / "extra" / "elsewhere.py").write_text("import ctypes\n")
    main = SourceFile("main.py", (tmp_path / "main.py").read_bytes(), tmp_path / "main.py")
    found, notes = local_modules(main, [tmp_path / "extra"])
    assert sorted(m.name for m in found) == ["elsewhere.py", "first.py", "pkg/__init__.py", "pkg/inner.py",
                                              "pkg/sibling.py", "second.py"]
    assert notes == []
    flags = static_read.read_tree(main, [tmp_path / "extra"], None).flags
    assert {(f.file, f.klass) for f in flags} == {("second.py", FlagClass.PYTHON_REACH),
                                                  ("elsewhere.py", FlagClass.NATIVE_REACH)}


def test_an_address_keyed_table_that_never_reaches_the_output_is_not_a_flag(tmp_path):
    """The shipped grouped GEMM's shape: a table of kernel arguments keyed by the addresses it holds."""
    (tmp_path / "table.py").write_text(
        "_TABLES = {}\n\n\ndef _table(a, c):\n    key = (a.data_ptr(), c.data_ptr())\n    if key in _TABLES:\n"
        "        return _TABLES[key]\n    _TABLES[key] = (a.data_ptr(), c.data_ptr())\n    return _TABLES[key]\n\n\n"
        "def custom_kernel(data):\n    a, c = data[0], data[-1]\n    table = _table(a, c)\n    launch(table, a, c)\n"
        "    return c\n")
    assert static_read.read_path(tmp_path / "table.py").flags == []


@pytest.mark.parametrize(("returned", "flagged"), [("[c for _, _, c in abc]", False), ("[c for c in _]", True)])
def test_a_comprehension_rebinding_a_cached_name_is_its_own_name(tmp_path, returned, flagged):
    """`table, tiles, _ = _table(...)` then `return [c for _, _, c in abc]`: the comprehension's `_` is
    not the cached one (the grouped GEMM of 2026-11-26); returning the cached value itself still is."""
    (tmp_path / "rebind.py").write_text(
        "_TABLES = {}\n\n\ndef custom_kernel(data):\n    abc = data[0]\n"
        "    table, tiles, _ = _TABLES[abc[0][0].data_ptr()]\n    launch(table, tiles)\n"
        f"    return {returned}\n")
    flags = static_read.read_path(tmp_path / "rebind.py").flags
    assert [f.klass for f in flags] == ([FlagClass.POINTER_CACHE] if flagged else [])


def test_an_address_sentinel_is_a_flag(tmp_path):
    (tmp_path / "sentinel.py").write_text(
        "_last = None\n_out = None\n\n\ndef custom_kernel(data):\n    global _last, _out\n"
        "    if data[0].data_ptr() == _last:\n        return _out\n    _last = data[0].data_ptr()\n"
        "    _out = compute(data)\n    return _out\n")
    flags = static_read.read_path(tmp_path / "sentinel.py").flags
    assert [(f.klass, f.line) for f in flags] == [(FlagClass.POINTER_CACHE, 7)]


@pytest.mark.parametrize(("snippet", "klass", "needle"), [
    ('name = "cudaSt" + "reamCreate"\n', FlagClass.OBFUSCATION, "spells 'cudaStreamCreate'"),
    ('name = "".join(["dl", "open"])\n', FlagClass.OBFUSCATION, "spells 'dlopen'"),
    ('name = "emit_despale"[::-1]\n', FlagClass.OBFUSCATION, "spells 'elapsed_time'"),
    ("import torch\nkind = input()\nf = getattr(torch.cuda, kind)\n", FlagClass.OBFUSCATION, "computed attribute"),
    ('SRC = r"""\n#include <cuda.h>\nvoid f() { void* p = dlsym(h, "cudaSt" "reamCreate"); }\n"""\n',
     FlagClass.OBFUSCATION, "adjacent C strings spell 'cudaStreamCreate'"),
    ('SRC = r"""\n#include <dlfcn.h>\nvoid f() { dlopen("libcuda.so", 1); }\n"""\n', FlagClass.NATIVE_REACH,
     "inline source opens native symbols"),
    ("import torch as t\ns = t.cuda.Stream()\n", FlagClass.STREAMS_GRAPHS, "creates a CUDA stream"),
    ("from torch.cuda import CUDAGraph\ng = CUDAGraph()\n", FlagClass.STREAMS_GRAPHS, "captures a CUDA graph"),
    ("import sys\nx = sys.modules['harness.worker.timers']\n", FlagClass.PYTHON_REACH, "sys.modules"),
    ("import torch\nsetattr(torch.cuda.Event, 'elapsed_time', None)\n", FlagClass.MONKEYPATCH,
     "setattr on torch.cuda.Event.elapsed_time"),
    ("import os\ndef f():\n    os.kill(1, 9)\n", FlagClass.PROCESS_TRICKS, "sends a signal"),
    ("blob = b'x\\x9c" + "\\x01" * 20 + "'\n", FlagClass.OBFUSCATION, "compressed or serialised blob"),
])
def test_each_rule_on_a_line_of_its_own(tmp_path, snippet, klass, needle):
    (tmp_path / "snippet.py").write_text(snippet)
    flags = static_read.read_path(tmp_path / "snippet.py").flags
    assert any(f.klass == klass and needle in f.evidence for f in flags), [f.evidence for f in flags]


def test_words_in_a_docstring_are_not_code(tmp_path):
    (tmp_path / "doc.py").write_text('"""Reads /proc/self/maps, calls ctypes and sets accessPolicyWindow."""\n')
    assert static_read.read_path(tmp_path / "doc.py").flags == []


def test_a_file_nested_past_what_can_be_read_is_a_flag_not_a_crash(tmp_path):
    (tmp_path / "deep.py").write_text("x = " + " + ".join(['"a"'] * 5000) + "\n")
    flags = static_read.read_path(tmp_path / "deep.py", guard=kernelguard).flags
    assert [f.klass for f in flags] == [FlagClass.SOURCE] and "cannot be read statically" in flags[0].evidence


def test_evidence_is_one_printable_line(tmp_path):
    (tmp_path / "escape.py").write_text('import ctypes  # \x1b[2J\x1b]0;pwned\x07\n')
    flags = static_read.read_path(tmp_path / "escape.py").flags
    assert flags and all(f.evidence.isprintable() for f in flags)
