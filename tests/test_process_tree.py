"""Which processes belong to a run: below its reaper, read from this machine's /proc."""

import os
import subprocess
import sys

from harness.judge.worker_link import process_tree


def test_a_child_and_its_child_are_below_us_and_our_parent_is_not():
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
                              "print(p.pid, flush=True); time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(child.stdout.readline())
        assert process_tree.below(child.pid, os.getpid()) and process_tree.below(grandchild, os.getpid())
        assert not process_tree.below(os.getppid(), os.getpid()) and not process_tree.below(os.getpid(), os.getpid())
        assert not process_tree.below(grandchild, child.pid + 10**6)  # another ancestor
    finally:
        child.kill()
        child.wait()
    assert not process_tree.below(2**22 + 1, os.getpid())  # no such process


def test_a_pidfd_and_a_proc_directory_name_their_process():
    directory = os.open(f"/proc/{os.getppid()}", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert process_tree.pidfd_target(os.getpid(), directory) == os.getppid()
    finally:
        os.close(directory)
    if hasattr(os, "pidfd_open"):
        pidfd = os.pidfd_open(os.getpid())
        try:
            assert process_tree.pidfd_target(os.getpid(), pidfd) == os.getpid()
        finally:
            os.close(pidfd)
    assert process_tree.pidfd_target(os.getpid(), 0) is None  # stdin: no process
    assert process_tree.same_pid_namespace(os.getpid())
