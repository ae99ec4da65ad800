# Everyday commands. Variables: PROBLEM, SUBMISSION, MODE, DEVICE, JSON, ARGS.
PYTHON ?= python3
PROBLEM ?=
SUBMISSION ?= submissions/nvfp4_gemv/torch_reference.py
MODE ?= all
EXTRAS ?= test

.PHONY: install eval test lint leaderboard sol calibrate gpu-check

# torch first: where none is installed, the pinned release (a CPU build on CPU-only hosts);
# where one is (a GPU image), it is kept.
install:
	$(PYTHON) -c "import torch" 2>/dev/null || $(PYTHON) -m pip install -q "torch==2.13.0"
	$(PYTHON) -m pip install -q -e ".[$(EXTRAS)]"

# Correctness on every test shape, then timing on every benchmark shape (CPU when no GPU).
# The problem comes from PROBLEM or from the file's '#!POPCORN leaderboard' line.
eval:
	$(PYTHON) -m harness eval $(PROBLEM) "$(SUBMISSION)" --mode $(MODE) \
		$(if $(DEVICE),--device $(DEVICE)) $(if $(JSON),--json $(JSON))

test:
	$(PYTHON) -m pytest -q tests

lint:
	ruff check .

leaderboard:
	$(PYTHON) -m harness leaderboard $(ARGS)

sol:
	$(PYTHON) -m harness sol $(or $(PROBLEM),nvfp4_gemv) $(ARGS)

calibrate:
	$(PYTHON) -m harness calibrate $(ARGS)

# The whole GPU check in one go (run it through the device tool; results under $$OUT).
gpu-check:
	bash scripts/gpu_check.sh
