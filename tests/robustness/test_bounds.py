"""Counts are bounded where they are read (issue 21): a node count, a repetition count or a plan
that no machine runs is refused with a message (exit 2) before anything grows, never a
MemoryError, a plan growing past gigabytes or a command that never answers."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from assay.errors import ConfigError, SuiteError
from assay.launch.slurm.options import MAX_NODES, options_from_config
from assay.model import Job, System
from assay.plan import Overrides, plan
from assay.plan.bounds import MAX_REPEAT
from assay.probes import PlanContext
from assay.suite import resolve_suite
from conftest import run_cli


def test_a_node_count_beyond_any_machine_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"--nodes 1000000000: at most 200000"):
        options_from_config({}, nodes=1_000_000_000)
    with pytest.raises(ConfigError, match=r"\[slurm\] nodes = 1000000000: at most 200000"):
        options_from_config({"slurm": {"nodes": 1_000_000_000}})
    assert options_from_config({}, nodes=MAX_NODES).nodes == MAX_NODES


def test_all_pairs_is_one_job_whatever_the_node_count() -> None:
    """All-pairs makes no pair before it runs (the probe runs the tournament in one job), so
    its bound is the node count's: over the largest allocation it is placed at once."""
    from assay.launch.place import NodeOptions, place
    from assay.model import Spread

    started = time.perf_counter()
    matrix = Job(job_id="001-allpairs", probe="allpairs", argv=["{exe}"], spawn="mpi",
                 mpi="mpich", ranks=2, spread=Spread("all-pairs"))  # fmt: skip
    (placed,) = place([matrix], NodeOptions(MAX_NODES))
    assert placed.ranks == MAX_NODES and len(placed.placement.indices) == MAX_NODES
    assert time.perf_counter() - started < 1


def _quick() -> tuple:
    spec, _, _ = resolve_suite("quick")
    return spec, PlanContext(system=System(cores=2))


def test_a_repetition_count_beyond_the_bound_is_refused_by_the_plan() -> None:
    spec, ctx = _quick()
    started = time.perf_counter()
    with pytest.raises(SuiteError, match=rf"repeat 99999999999: at most {MAX_REPEAT}"):
        plan(spec, ctx, Overrides(repeat=99_999_999_999))
    spec.repeat = 99_999_999_999  # a suite file's own repeat = is held to the same bound
    with pytest.raises(SuiteError, match="repeat 99999999999"):
        plan(spec, ctx)
    assert time.perf_counter() - started < 2


def test_a_plan_beyond_the_job_bound_is_refused_as_it_grows(monkeypatch) -> None:
    import assay.plan.expand as expand

    spec, ctx = _quick()
    monkeypatch.setattr(expand, "MAX_JOBS", 20)
    with pytest.raises(SuiteError, match=r"more than 20 jobs"):
        plan(spec, ctx, Overrides(repeat=50, only=["stream"]))


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--on", "slurm", "--nodes", "1000000000"], "--nodes 1000000000: at most 200000"),
        (["--on", "slurm", "--nodes", "200001", "--all-pairs"], "--nodes 200001: at most"),
        (["--repeat", "99999999999"], "repeat 99999999999: at most"),
    ],
)
def test_the_cli_answers_at_once_with_exit_2(tmp_path: Path, args: list[str], words: str):
    started = time.perf_counter()
    try:
        proc = run_cli("run", "quick", "--dry-run", *args, home=tmp_path, timeout=30,
                       env={"ASSAY_CONFIG": str(tmp_path / "none.toml")})  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"assay run {' '.join(args)} --dry-run did not answer in 30 s")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert words in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr
    assert time.perf_counter() - started < 20


def test_an_all_pairs_dry_run_over_the_largest_allocation_answers(tmp_path: Path) -> None:
    proc = run_cli("run", "quick", "--dry-run", "--on", "slurm", "--nodes", str(MAX_NODES),
                   "--all-pairs", home=tmp_path, timeout=30,
                   env={"ASSAY_CONFIG": str(tmp_path / "none.toml")})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"--nodes={MAX_NODES}" in proc.stdout
    assert len(proc.stdout) < 100_000  # the plan: one job per MPI, not one per pair


def test_placing_on_an_allocation_is_bounded_too(monkeypatch) -> None:
    import assay.launch.place as place_module
    from assay.launch.place import NodeOptions
    from assay.model import Job, Spread

    monkeypatch.setattr(place_module, "MAX_JOBS", 10)
    jobs = [
        Job(job_id=f"{i:03d}-hpl", probe="hpl", argv=["x"], spread=Spread("per-node"))
        for i in range(2)
    ]
    assert len(place_module.place(jobs[:1], NodeOptions(nodes=8))) == 8
    with pytest.raises(ConfigError, match="more than 10 jobs"):
        place_module.place(jobs, NodeOptions(nodes=8))


def test_a_sweep_is_counted_before_its_points_are_made(tmp_path: Path) -> None:
    """1000 x 1000 x 100 sweep values: 10^8 points, each a dict, were built before the job
    bound was looked at (minutes and gigabytes); the product is counted first."""
    import resource

    from assay.suite.loader import load_suite

    values = ", ".join(str(i) for i in range(1000))
    text = (
        'name = "huge"\n[[bench]]\nprobe = "stream"\n'
        f"sweep = {{ threads = [{values}], elements = [{values}], "
        f"ntimes = [{', '.join(str(i) for i in range(100))}] }}\n"
    )
    spec = load_suite(text, "huge.toml")
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(SuiteError, match=r"1,000 threads x 1,000 elements x 100 ntimes = "
                                         r"100,000,000 points: more than 200000 jobs"):  # fmt: skip
        plan(spec, PlanContext(system=System(cores=2)))
    assert time.perf_counter() - started < 2
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB


def test_a_toml_integer_over_4300_digits_is_bad_input(tmp_path: Path) -> None:
    """tomllib raises a plain ValueError (not TOMLDecodeError) for an integer int() refuses:
    a traceback from every TOML reader that caught only TOMLDecodeError."""
    from assay.plan.expand import parse_value
    from assay.run.configfile import load_config
    from assay.suite.loader import load_suite

    big = "9" * 5000
    with pytest.raises(SuiteError, match="a number too long to read"):
        load_suite(f'name = "s"\nrepeat = {big}\n', "s.toml")
    (tmp_path / "config.toml").write_text(f"[slurm]\nnodes = {big}\n")
    with pytest.raises(ConfigError, match="a number too long to read"):
        load_config(tmp_path / "config.toml")
    assert parse_value(big) == big  # a --set value that is no TOML value is text


PEAK_RSS = """
import resource, subprocess, sys
proc = subprocess.run([sys.executable, "-m", "assay", *sys.argv[1:]], capture_output=True,
                      text=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)  # KiB
sys.stdout.write(proc.stdout)
sys.stderr.write(proc.stderr)
sys.exit(proc.returncode)
"""


def _import_peak(home: Path, path: Path) -> tuple[int, str]:
    """``assay import`` of ``path`` in a child of its own: its peak resident memory in bytes."""
    import os
    import sys

    env = {**os.environ, "ASSAY_HOME": str(home), "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-c", PEAK_RSS, "import", "--format", "osu",
                           str(path)], capture_output=True, text=True, timeout=120,
                          env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    peak, out = proc.stdout.split("\n", 1)
    return int(peak) * 1024, out + proc.stderr


def test_import_holds_little_memory_per_row(tmp_path: Path) -> None:
    """An OSU file of 250,000 sizes (3.3 MB) needed more than 1 GB to import, ~5 KB a row: the
    fold kept each row's decoded line, the records and the figures' cache were encoded whole.
    Here 40,000 rows against one: the peak may grow by 2 KB a row at most (today: < 1 KB)."""
    import json

    rows = 40_000
    head = "# OSU MPI Latency Test v5.6.2\n# Size          Latency (us)\n"
    big, small = tmp_path / "big.txt", tmp_path / "small.txt"
    big.write_text(head + "".join(f"{i:<16d}{1 + i % 97 / 100:.2f}\n" for i in range(rows)))
    small.write_text(head + "0               1.00\n")
    base, _ = _import_peak(tmp_path / "one", small)
    peak, out = _import_peak(tmp_path / "many", big)
    assert f"{rows} samples" in out
    assert peak - base < rows * 2048, f"{(peak - base) / rows:.0f} bytes a row"
    (run,) = (tmp_path / "many" / "runs").iterdir()
    assert sum(1 for _ in (run / "samples.jsonl").open()) == rows  # every row kept
    cache = (run / "figures.cache.json").read_text().split("\n")
    assert len(json.loads(cache[1])["figures"]) == rows  # and folded, one figure each
