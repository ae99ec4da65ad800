"""The supervisor's reading of a path: every route to /proc/<pid>/mem it must see through."""

import os

from harness.contract import proc_mounts
from harness.judge.worker_link import proc_paths

ROOTS = ["/proc"]
ME = os.getpid()


def leads_to(path, base="/", tid=ME):
    return proc_paths.walk(tid, ME, base, path, ROOTS)


def refused(path, base="/"):
    hit = proc_paths.sensitive(leads_to(path, base), ROOTS)
    return hit[0] if hit else None


def test_self_and_thread_self_are_the_task_s_own():
    assert leads_to("/proc/self/mem")[-1] == f"/proc/{ME}/mem"
    assert leads_to("/proc/thread-self/mem")[-1] == f"/proc/{ME}/task/{ME}/mem"
    assert leads_to("/proc/thread-self/../../mem")[-1] == f"/proc/{ME}/mem"
    assert leads_to("/proc/net/../mem")[-1] == f"/proc/{ME}/mem"  # /proc/net -> self/net, then up


def test_every_route_to_a_process_s_memory_is_refused(tmp_path):
    assert refused("/proc/self/mem") == refused(f"/proc/{ME}/task/{ME}/mem") == "proc_mem"
    assert refused("/proc/1/mem") == refused("/proc/self/pagemap") == refused("/proc/self/map_files/") == "proc_mem"
    assert refused("mem", base=f"/proc/{ME}") == "proc_mem"  # openat on a /proc/self dirfd
    (tmp_path / "notes.txt").symlink_to("/proc/self/mem")
    (tmp_path / "hop").symlink_to("notes.txt")
    assert refused("hop", base=str(tmp_path)) == "proc_mem"
    directory = os.open("/proc/self", os.O_PATH | os.O_DIRECTORY)
    try:
        assert refused(f"/proc/self/fd/{directory}/mem") == "proc_mem"  # through an fd's magic link
        assert proc_paths.base_of(ME, directory, "mem") == f"/proc/{ME}"
    finally:
        os.close(directory)
    assert refused("/dev/userfaultfd") == "userfaultfd"


def test_ordinary_files_and_proc_entries_pass(tmp_path):
    (tmp_path / "kernel.py").write_text("")
    assert refused("kernel.py", base=str(tmp_path)) is None
    assert refused("/proc/self/maps") is None and refused("/proc/self/status") is None
    assert refused("/proc/cpuinfo") is None and refused("/proc/self/fd/0") is None
    assert proc_paths.base_of(ME, -100, "x") == os.getcwd()


def test_other_proc_mounts_count_as_proc():
    line = "36 25 0:5 / /mnt/p rw,nosuid shared:12 - proc proc rw\n22 1 0:21 /sys /proc/sys ro - proc proc rw\n"
    assert proc_mounts.proc_roots(line) == ["/mnt/p"]
    assert proc_paths.sensitive(["/mnt/p/7/mem"], ["/mnt/p"]) == ("proc_mem", "/mnt/p/7/mem")
