"""The test suite's own layout: `make test` runs the tests that are not ``quiet`` beside the
quiet ones (at nice 19, and `make test-fast` on every core), so a module that reads a clock (a
budget, a timeout, a rate) and is not marked quiet could be starved or run beside another
worker's MPI ranks and fail now and then, as three did when the whole suite ran on two
workers."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import NOT_QUIET, QUIET_MODULES, QUIET_STAGES, is_quiet

TESTS = Path(__file__).resolve().parents[1]
CLOCK = re.compile(r"\b(?:time\.)?(?:monotonic|perf_counter|time)\(\)")


def _modules() -> list[Path]:
    return sorted(TESTS.glob("*/test_*.py"))


def reads_a_clock(text: str) -> bool:
    return bool(CLOCK.search(text))


def test_every_module_that_reads_a_clock_is_quiet() -> None:
    loud = [
        p.relative_to(TESTS).as_posix()
        for p in _modules()
        if p.parent.name != "cluster"
        and p != Path(__file__).resolve()  # this file holds the rule's examples
        and reads_a_clock(p.read_text())
        and not is_quiet(p)
    ]
    assert not loud, f"add to QUIET_MODULES in tests/conftest.py: {loud}"


def test_the_quiet_tables_name_what_exists() -> None:
    stages = {p.parent.name for p in _modules()}
    modules = {f"{p.parent.name}/{p.stem}" for p in _modules()}
    assert stages >= QUIET_STAGES, QUIET_STAGES - stages
    assert modules >= (QUIET_MODULES | NOT_QUIET), (QUIET_MODULES | NOT_QUIET) - modules
    assert not any(m.split("/")[0] in QUIET_STAGES for m in QUIET_MODULES)


def test_the_cluster_tests_are_in_their_folder() -> None:
    """`make test` collects the namespace cluster's tests from tests/cluster alone."""
    strays = [
        p.relative_to(TESTS).as_posix()
        for p in _modules()
        if p.parent.name != "cluster"
        and p != Path(__file__).resolve()  # this file names the marker
        and "mark.cluster" in p.read_text()
    ]
    assert not strays, f"move the cluster tests to tests/cluster: {strays}"


def test_the_clock_rule_can_fail() -> None:
    assert reads_a_clock("started = time.monotonic()")
    assert reads_a_clock("t0 = perf_counter()\n")
    assert not reads_a_clock("timeout = 30  # the monotonic clock is read by the runner")
    assert is_quiet(TESTS / "run" / "test_cli_run.py")
    assert not is_quiet(TESTS / "parsers" / "test_real_outputs.py")
    assert not is_quiet(TESTS / "probes" / "test_gpu.py")
