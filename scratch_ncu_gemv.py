import sys
from pathlib import Path
sys.path.insert(0, '.')
from harness.contract.task_spec import load_task
from harness.sol import replay_clock
from harness.sol.replay_clock import load_shipped
import torch
k = load_shipped(Path('submissions/nvfp4_gemv/triton_gemv.py'))
for case in load_task('nvfp4_gemv').benchmarks:
    inputs = replay_clock.shape_inputs('nvfp4_gemv', case)
    for i in range(3):
        k(inputs[i % len(inputs)])
    torch.cuda.synchronize()
