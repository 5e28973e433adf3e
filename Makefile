# For users who live in make: thin wrappers around the harness (docs/batch.md).
#   make results            bring every scenario in $(SCENARIOS) up to date (re-runs only what changed)
#   make report             re-render every report from stored records (no model runs)
#   make test               the README's test command inside the project's virtual environment
# Variables: SCENARIOS (files or folders), JOBS (parallel FVP instances), ARGS (extra `fvp-harness make` options),
# VENV (virtual environment folder; falls back to the python on PATH when it does not exist).

VENV ?= .venv
PYTHON ?= $(if $(wildcard $(VENV)/bin/python),$(VENV)/bin/python,python3)
SCENARIOS ?= scenarios
RESULTS ?= results
JOBS ?=
ARGS ?=
HARNESS = $(PYTHON) -m fvp_harness

.PHONY: results report test

results:
	$(HARNESS) make $(if $(JOBS),-j $(JOBS)) --results $(RESULTS) $(ARGS) $(SCENARIOS)

# every folder is rendered; one whose report exits non-zero is named; the target fails at the end
report:
	@failed=0; for dir in $(RESULTS)/*/; do \
		if [ -f "$$dir/manifest.json" ]; then \
			$(HARNESS) report -q "$$dir" \
				|| { echo "make report: $$dir exited $$?" >&2; failed=1; }; \
		fi; \
	done; exit $$failed

test:
	$(PYTHON) -m pytest -q
