# Everyday commands. Variables: PROBLEM, SUBMISSION, MODE, DEVICE, JSON, ARGS.
PYTHON ?= python3
PROBLEM ?=
SUBMISSION ?= submissions/nvfp4_gemv/torch_reference.py
MODE ?= all
EXTRAS ?= test

# GNU make exits 2 whenever a recipe fails (it prints the recipe's code: "Error 112"). A failing
# harness command writes its own exit code to EXIT_CODE_FILE; scripts/make.sh runs make with a
# fresh one and exits with that code (scripts/make.sh eval SUBMISSION=my.py -> 112, 113, ...).
# The recipe prints the command itself (@ hides that plumbing; the echo shows what runs).
EXIT_CODE_FILE ?=
harness = @echo $(PYTHON) -m harness $(1); $(PYTHON) -m harness $(1)$(if $(EXIT_CODE_FILE), || { code=$$?; echo $$code > "$(EXIT_CODE_FILE)"; exit $$code; })

.PHONY: install eval test lint leaderboard sol calibrate gpu-check

# torch first: where none is installed, the pinned release (a CPU build on CPU-only hosts);
# where one is (a GPU image), it is kept. Then the bytecode a run imports, where the environment
# keeps none of its own, and on a GPU the harness's own kernels (harness/warm.py: as pip writes
# bytecode at install time).
install:
	$(PYTHON) -c "import torch" 2>/dev/null || $(PYTHON) -m pip install -q "torch==2.13.0"
	$(PYTHON) -m pip install -q -e ".[$(EXTRAS)]"
	$(PYTHON) -m harness.warm

# Correctness on every test shape, then timing on every benchmark shape (CPU when no GPU).
# The problem comes from PROBLEM or from the file's '#!POPCORN leaderboard' line.
eval:
	$(call harness,eval $(PROBLEM) "$(SUBMISSION)" --mode $(MODE) \
		$(if $(DEVICE),--device $(DEVICE)) $(if $(JSON),--json $(JSON)) $(ARGS))

test:
	$(PYTHON) -m pytest -q tests

lint:
	ruff check .

# Evaluate and rank every file under submissions/ (PROBLEM: only that problem; DEVICE: cpu for a dry run).
leaderboard:
	$(call harness,leaderboard $(if $(PROBLEM),--problem $(PROBLEM)) $(if $(DEVICE),--device $(DEVICE)) $(ARGS))

sol:
	$(call harness,sol $(or $(PROBLEM),nvfp4_gemv) $(if $(DEVICE),--device $(DEVICE)) $(ARGS))

calibrate:
	$(call harness,calibrate $(if $(DEVICE),--device $(DEVICE)) $(ARGS))

# The whole GPU check in one go (run it through the device tool; results under $$OUT).
gpu-check:
	bash scripts/gpu_check.sh
