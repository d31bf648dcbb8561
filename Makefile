# The README's two commands: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-quick test-fast soak deps lint bench clean

run: deps
	$(BIN)/assay run quick
	$(BIN)/assay report
	@mkdir -p build
	@$(BIN)/assay report --format html -o build/report.html >/dev/null
	@echo "HTML report of this run (one self-contained file): $(CURDIR)/build/report.html"

# The fast loop on every core (pytest-xdist): each module's tests share one worker, so a module
# fixture (compiled probes, a baseline run, a browser) is made once. By file, not by
# xdist_group: under pytest 9.2 xdist 3.8 no longer reads the groups (each group's tests went
# to both workers, and test_gpu's nvcc builds were made twice). The heavy modules first
# (tests/conftest.py orders them; xdist's own order, most tests first, is turned off). One
# worker more than the cores: a fifth of the tests' time is waiting (timeouts, fio's I/O, a
# child's start), and a third worker fills it (2 cores: 4m31s-5m38s in four runs, 5m32s with
# two workers, 5m11s with four).
JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
XDIST := -n $(JOBS) --dist loadfile --no-loadscope-reorder

# `make test` (what CI runs), each part run to its end (one CI run shows every failure):
# - the `quiet` tests, which measure speed or time (tests/conftest.py), in one process: two
#   workers on 2 cores oversubscribed the MPI tests, and three timing-sensitive tests failed
#   that way in three whole runs;
# - beside them, at the lowest priority (nice 19: the kernel gives them a core only when the
#   quiet ones leave it idle, which they mostly do), the tests that read no clock;
# - then the namespace Slurm cluster's, alone (collecting tests/cluster only: the whole tree's
#   collection is 6 s; tests/architecture/test_test_layout.py keeps the marker in that folder).
# The quiet and the cluster parts list their 15 longest tests: where CI's time went.
# $(call quiet_and_others,MARKS): the first two parts for the tests MARKS selects; sets rc.
LIGHT_LOG := build/test-light.log
define quiet_and_others
mkdir -p build; rc=0; \
nice -n 19 $(BIN)/python -m pytest -q -p no:cacheprovider --basetemp=/tmp/assay-light-tests \
  -m "$(1) and not quiet" >$(LIGHT_LOG) 2>&1 & light=$$!; \
$(BIN)/python -m pytest -q --durations=15 -m "$(1) and quiet" || rc=1; \
wait $$light || rc=1; \
echo "--- the tests that read no clock (run beside these, at nice 19):"; cat $(LIGHT_LOG)
endef

test: deps
	@$(prune_probe_cache); $(call quiet_and_others,not soak and not cluster); \
	$(BIN)/python -m pytest -q --durations=15 -m "cluster and not soak" tests/cluster || rc=1; \
	exit $$rc

# The quick loop: make test's layout without the cluster and the tests marked `slow` (whole
# runs of a suite, a check or an MPI sweep; ~8 % of the tests, ~3/4 of the quiet ones' time).
test-quick: deps
	@$(prune_probe_cache); $(call quiet_and_others,not soak and not cluster and not slow); exit $$rc

# The fast loop: everything but the namespace Slurm cluster (and soak).
test-fast: deps
	@$(prune_probe_cache)
	$(BIN)/python -m pytest -q $(XDIST) -m "not soak and not cluster"

# The probes the tests compile are kept in build/probe-cache, one folder for every process of a
# make target and for its next run (tests/conftest.py kept_cache: a changed source, header,
# flag or compiler is a new key; a clean clone, as CI's, starts it empty and compiles each
# probe once for make test's three parts). Emptied past 60 builds (each edit of a shared header
# adds a set; every test copies the C probes' folder into its home). `make test-fast` here,
# 2026-11-28 on a slow hour: 357-380 s with a cache per worker and session, 340.5 s from an
# empty shared one, 292.7, 316.2 and 312.3 s warm; later that day, with lighter starts and the
# all-pairs retests inside their sweeps' launches, 294.0, 285.0 and 274.7 s.
PROBE_CACHE := build/probe-cache
define prune_probe_cache
if [ -d $(PROBE_CACHE) ] && [ $$(find $(PROBE_CACHE) -mindepth 2 -maxdepth 2 | wc -l) -gt 60 ]; \
then rm -rf $(PROBE_CACHE); fi
endef
test test-quick test-fast: export ASSAY_TEST_PROBE_CACHE := $(CURDIR)/$(PROBE_CACHE)

# Bytecode for the hundreds of 'python -m assay' the tests start, kept in build/ (not in the
# tree), even where the environment says not to write it: compiling assay's modules again
# in every process was a third of each command's start.
test test-quick test-fast: export PYTHONPYCACHEPREFIX := $(CURDIR)/build/pycache
test test-quick test-fast: export PYTHONDONTWRITEBYTECODE :=

# Long fault-injection runs, not part of `make test` (which runs small versions of them):
# 100,000 mutated outputs per parser (every test marked `soak`), then 20 SIGKILLs of
# `assay run` at random points (seeded: ASSAY_SOAK_SEED replays a failure).
soak: deps
	$(BIN)/python -m pytest -q -s -m soak
	ASSAY_SOAK_KILLS=20 $(BIN)/python -m pytest -q -s tests/robustness/test_soak_kill.py

deps: $(STAMP)
	@scripts/install-system-deps

$(STAMP): pyproject.toml
	@scripts/install-system-deps
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

lint: deps
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

bench: deps
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache
