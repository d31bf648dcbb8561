"""The all-pairs probe (native/allpairs.c and probes/allpairs.py), compiled here and run for real
with Open MPI and MPICH: several ranks on this one machine stand for the nodes.

Checked: the rounds are the circle method's (every pair exactly once, N odd with a bye), the
pilot sizes the iterations and every round uses the same, --pairs-at-once, a list of pairs
(retest), a partner that stops answering (exit 4, the file closed with its flag, no hang), a
rank killed mid-sweep (the finished rounds readable), bad input (exit 2), and the Python probe's
samples (per node, per matrix) from what the real probe wrote.  Iterations are fixed and tiny
where the method is not what is tested: the whole file runs in about a minute on 2 cores.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from test_native_probes import MPIS, Built, Mpi, compile_probe

from assay.analysis.compare.verdict import identity
from assay.analysis.statistics.stats import fold_samples
from assay.condensed import n_links, node_links
from assay.model import Job, MpiInfo, System
from assay.parsers.allpairs_file import (
    RECORD,
    ROUND_HEAD,
    MatrixFile,
    read_matrix_file,
    write_sweep,
)
from assay.probes.allpairs import AllPairsParams, AllPairsProbe, rounds_of, summary_lines
from assay.probes.base import ASK_FILE, DONE_FILE, PLAN_FILE, PlanContext
from conftest import run_cli
from tournament import rounds

TIMEOUT = 90  # one probe run; a hang fails the test instead of the suite
FAST = ["--lat-iterations", "20", "--bw-iterations", "2", "--bw-size", "16384", "--window", "8"]


@dataclass
class Run:
    proc: subprocess.CompletedProcess[str]
    cwd: Path

    @property
    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.proc.stdout.splitlines()]

    def matrix(self, name: str = "allpairs.bin") -> MatrixFile:
        return read_matrix_file(self.cwd / name)


@pytest.fixture(scope="module", params=sorted(MPIS))
def mpi(request: pytest.FixtureRequest) -> Mpi:
    m = MPIS[request.param]
    if not (shutil.which(m.cc) and shutil.which(m.launcher)):
        pytest.skip(f"{m.cc} / {m.launcher} not found: apt-get install {m.packages}")
    return m


@pytest.fixture(scope="module")
def allpairs(mpi: Mpi, tmp_path_factory: pytest.TempPathFactory) -> Built:
    out = tmp_path_factory.mktemp("allpairs") / f"allpairs_{mpi.name}"
    return compile_probe(mpi.cc, "allpairs.c", out, ("-lpthread",))


def launch(mpi: Mpi, ranks: int) -> list[str]:
    # Ranks outnumber the 2 cores: Open MPI yields when idle (BRIEF: 32 busy-polling ranks
    # hung without it), and the probe's own polling yields too (--yield, for MPICH).
    if mpi.name == "openmpi":
        return [*mpi.launch(ranks), "--mca", "mpi_yield_when_idle", "1"]
    return [*mpi.launch(ranks), "-bind-to", "none"]


def run_probe(mpi: Mpi, exe: Path, ranks: int, cwd: Path, *args: str) -> Run:
    cwd.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [*launch(mpi, ranks), str(exe), "--yield", *args],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd,
        env={**os.environ, **mpi.env}, check=False,
    )  # fmt: skip
    return Run(proc, cwd)


def ok(run: Run) -> Run:
    assert run.proc.returncode == 0, f"exit {run.proc.returncode}\n{run.proc.stderr}"
    return run


def file_pairs(m: MatrixFile) -> list[list[tuple[int, int]]]:
    """The pairs of each round in file order (the reader folds them into the matrix)."""
    data = m.path.read_bytes()
    pos = int.from_bytes(data[8:12], "little")
    out = []
    for r in m.rounds:
        rec = np.frombuffer(data, RECORD, r.count, pos + ROUND_HEAD.itemsize)
        out.append(list(zip(rec["a"].tolist(), rec["b"].tolist(), strict=True)))
        pos += ROUND_HEAD.itemsize + RECORD.itemsize * r.count
    return out


# ---------------------------------------------------------------------------------------------
# the C probe


def test_compiles_without_warnings(allpairs: Built):
    assert allpairs.warnings == ""


@pytest.mark.slow
@pytest.mark.parametrize("ranks", [4, 5, 8])
def test_every_pair_once_in_the_tournament_rounds(
    mpi: Mpi, allpairs: Built, tmp_path: Path, ranks: int
):
    run = ok(run_probe(mpi, allpairs.exe, ranks, tmp_path, *FAST))
    m = run.matrix()
    assert m.complete and not m.timed_out and m.note == ""
    assert file_pairs(m) == rounds(ranks)  # the circle method's rounds, in order
    assert [r.number for r in m.rounds] == list(range(1, len(rounds(ranks)) + 1))
    assert {r.kind for r in m.rounds} == {"sweep"}
    assert {(r.lat_iterations, r.bw_iterations) for r in m.rounds} == {(20, 2)}
    for values in (m.latency, m.bandwidth):
        assert values.shape == (n_links(ranks),) and bool(np.all(values > 0))
    assert (m.lat_size, m.bw_size, m.window) == (8, 16384, 8)
    lat, bw = run.lines
    assert (lat["metric"], bw["metric"]) == ("p2p.latency", "p2p.bandwidth")
    for line, values in ((lat, m.latency), (bw, m.bandwidth)):
        assert line["stats"]["n"] == n_links(ranks)
        assert line["value"] == pytest.approx(float(np.median(values)), rel=1e-6)
        assert line["params"]["summary"] == "matrix"
        assert line["params"]["node_count"] == ranks
        assert line["params"]["rounds"] == len(rounds(ranks))
        assert line["params"]["concurrent_pairs"] == ranks // 2
    # t_start and wall_s: each round's window, barrier to barrier; the next starts after it
    starts = [r.t_start for r in m.rounds]
    assert starts[0] == 0.0 and starts == sorted(starts)
    for a, b in zip(m.rounds, m.rounds[1:], strict=False):
        assert b.t_start >= a.t_start + a.wall_s


@pytest.mark.slow
def test_the_coordinators_work_is_between_rounds_never_in_a_pairs_window(
    mpi: Mpi, allpairs: Built, tmp_path: Path
):
    """The issue: on 64 nodes the node of rank 0 read 1.54x slower than the median node, its
    gathering and writing beside its own measurements.  Rank 0 made to take 2.2 s more between
    rounds (--test-coordinator-delay; a partner waits 2 s at most, the stall floor): the next
    round starts when it is done, so no pair waits for rank 0 inside its measurement (before,
    its partner gave it up as unresponsive: exit 4), and the time lies between the rounds'
    windows, not in them."""
    slow = ["--pair-budget", "0.01", "--test-coordinator-delay", "2.2"]
    run = ok(run_probe(mpi, allpairs.exe, 4, tmp_path, *FAST, *slow))
    m = run.matrix()
    assert m.complete and not m.timed_out and file_pairs(m) == rounds(4)
    assert all(r.wall_s < 2.0 for r in m.rounds), [r.wall_s for r in m.rounds]
    for a, b in zip(m.rounds, m.rounds[1:], strict=False):
        assert b.t_start - (a.t_start + a.wall_s) >= 2.2, (a, b)
    assert not np.isnan(m.latency).any() and not np.isnan(m.bandwidth).any()


@pytest.mark.slow
def test_pilot_sizes_the_iterations_once_for_the_sweep(mpi: Mpi, allpairs: Built, tmp_path: Path):
    run = ok(run_probe(mpi, allpairs.exe, 4, tmp_path, "--pair-budget", "0.2"))
    m = run.matrix()
    said = re.search(
        r"pilot: (\S+) s a round trip of 8 B -> (\d+) latency iterations; (\S+) s a window of "
        r"64 x 131072 B -> (\d+) bandwidth iterations \(pair budget 0.2 s\)",
        run.proc.stderr,
    )
    assert said, run.proc.stderr
    t_lat, n_lat, t_bw, n_bw = float(said[1]), int(said[2]), float(said[3]), int(said[4])
    # iterations = floor(share / the median pair's time per iteration), at least 1: latency a
    # quarter of the budget, bandwidth the rest; the times are printed to 3 digits (%.3g: up
    # to 0.5 % off), so the floor of the printed time's quotient may be one off either way
    for n, share, t in ((n_lat, 0.25 * 0.2, t_lat), (n_bw, 0.75 * 0.2, t_bw)):
        low, high = (max(1, math.floor(share / (t * (1 + e)))) for e in (5e-3, -5e-3))
        assert low <= n <= high, (n, share, t)
    assert {(r.lat_iterations, r.bw_iterations) for r in m.rounds} == {(n_lat, n_bw)}
    lat, bw = run.lines
    assert (lat["params"]["timed_iterations"], bw["params"]["timed_iterations"]) == (n_lat, n_bw)
    # OSU's 100 round trips and 2 windows, but no more than the timed ones, at least 10 and 1
    warm = (min(100, max(10, n_lat)), min(2, max(1, n_bw)))
    assert (lat["params"]["warmup"], bw["params"]["warmup"]) == warm
    # where the start went (issue 27: the launch taken apart), in the order it happened
    start = re.search(
        r"start: 4 ranks began within (\S+) s; the last MPI_Init returned at (\S+) s, the host "
        r"names were gathered at (\S+) s (?s:.*?)pilot done at (\S+) s\n(?s:.*)done at (\S+) s",
        run.proc.stderr,
    )
    assert start, run.proc.stderr
    times = [float(t) for t in start.groups()]
    assert times == sorted(times) and times[0] >= 0, times
    assert times[-1] - times[3] >= m.rounds[-1].t_start + m.rounds[-1].wall_s


def test_the_warm_up_is_osus_but_never_more_than_the_timed_iterations(
    mpi: Mpi, allpairs: Built, tmp_path: Path
):
    """Issue 27: at 64 nodes on 2 cores the pilot timed 17 round trips and 1 window, after
    OSU's 100 round trips and 2 windows untimed (0.6 s of warm-up to 0.2 s measured a pair).
    The warm-up is OSU's count, capped by the timed iterations (at least 10 and 1); a count
    the user gives is kept."""
    given = ("--lat-warmup", "50", "--bw-warmup", "4")
    cases = (
        (("--lat-iterations", "3", "--bw-iterations", "1"), (10, 1)),
        (("--lat-iterations", "40", "--bw-iterations", "1"), (40, 1)),
        (("--lat-iterations", "500", "--bw-iterations", "5"), (100, 2)),  # OSU's
        (("--lat-iterations", "3", "--bw-iterations", "1", *given), (50, 4)),  # kept
    )
    for i, (args, warm) in enumerate(cases):
        lat, bw = ok(run_probe(mpi, allpairs.exe, 2, tmp_path / str(i), *args)).lines
        assert (lat["params"]["warmup"], bw["params"]["warmup"]) == warm, args


@pytest.mark.slow
def test_a_window_that_does_not_fit_the_budget_grows_it_and_the_run_finishes(
    mpi: Mpi, allpairs: Built, tmp_path: Path
):
    """A slow or busy fabric (the issue: 64 nodes on 2 cores, 0.101 s a window against the
    default 0.1 s) grows the pair budget to fit one window, within the sweep target, instead of
    refusing the default run; the file's header and the summary record what was chosen."""
    big = ["--bw-size", "1048576", "--pair-budget", "0.001"]  # 64 x 1 MiB: 64 MiB a window
    run = ok(run_probe(mpi, allpairs.exe, 4, tmp_path, *big))
    assert "pair budget grown to fit one window" in run.proc.stderr
    m = run.matrix()
    _, bw = run.lines
    assert m.window == 64 and bw["params"]["window"] == 64
    assert m.pair_budget_s > 0.001 and bw["params"]["pair_budget"] == pytest.approx(
        m.pair_budget_s, rel=1e-6
    )
    assert bw["params"]["fitted"] == "pair budget grown to fit one window"
    assert {r.bw_iterations for r in m.rounds} == {1}


@pytest.mark.slow
def test_past_the_sweep_target_the_window_shrinks(mpi: Mpi, allpairs: Built, tmp_path: Path):
    """Past what the sweep target allows a pair, the window shrinks to what fits (said, and
    recorded as the window every figure used) rather than the run failing."""
    tight = ["--bw-size", "4194304", "--pair-budget", "0.001", "--sweep-target", "0.03"]
    run = ok(run_probe(mpi, allpairs.exe, 4, tmp_path, *tight))
    assert "window shrunk to fit the sweep target" in run.proc.stderr, run.proc.stderr
    m = run.matrix()
    _, bw = run.lines
    assert 1 <= m.window < 64 and bw["params"]["window"] == m.window
    assert m.pair_budget_s == pytest.approx(0.03 / 3, rel=1e-6)  # 3 rounds of one group


@pytest.mark.slow
def test_pairs_at_once_one_measures_every_pair_once(mpi: Mpi, allpairs: Built, tmp_path: Path):
    run = ok(run_probe(mpi, allpairs.exe, 5, tmp_path, *FAST, "--pairs-at-once", "1"))
    m = run.matrix()
    assert file_pairs(m) == rounds(5)
    assert all(line["params"]["concurrent_pairs"] == 1 for line in run.lines)
    assert not np.isnan(m.latency).any()


@pytest.mark.slow
def test_pairs_file_is_scheduled_greedily_as_a_retest(mpi: Mpi, allpairs: Built, tmp_path: Path):
    listed = [(0, 3), (1, 2), (2, 3), (0, 1), (3, 0)]
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "pairs.txt").write_text(
        "# links to confirm\n0 3\n1 2  # slow?\n2,3\n\n0 1\n3 0\n"
    )  # fmt: skip
    run = ok(
        run_probe(mpi, allpairs.exe, 4, tmp_path, *FAST, "--pairs", "pairs.txt",
                  "--first-round", "4", "--output", "retest.bin")
    )  # fmt: skip
    m = run.matrix("retest.bin")
    # each pair after both its nodes' previous pairs: (0,3) (1,2) | (2,3) (0,1) | (0,3)
    assert file_pairs(m) == [[(0, 3), (1, 2)], [(0, 1), (2, 3)], [(0, 3)]]
    assert rounds_of(4, listed) == [2, 2, 1]  # the Python side's estimate agrees
    assert [(r.number, r.kind) for r in m.rounds] == [(4, "retest"), (5, "retest"), (6, "retest")]
    assert len(m.retests) == 5 and np.isnan(m.latency).all()  # retests stay apart
    assert all(line["params"]["kind"] == "retest" for line in run.lines)
    assert run.lines[0]["params"]["links_planned"] == 5


def _answer_when_asked(where: Path, plan: str | None) -> threading.Thread:
    """The runner's side of the hand-over: once the job asks, its plan (written whole, by a
    rename, as the runner writes it); None: no answer at all."""

    def answer() -> None:
        deadline = time.monotonic() + TIMEOUT
        while not (where / ASK_FILE).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        if plan is not None:
            (where / "plan.part").write_text(plan)
            (where / "plan.part").rename(where / PLAN_FILE)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread


def test_a_retest_planned_while_the_sweep_runs_is_measured_in_its_launch(
    mpi: Mpi, allpairs: Built, tmp_path: Path
):
    """--ask-follow-up: after its rounds the sweep asks, reads the plan, and measures the
    retest in the same launch, in the retest's directory: its own stdout, stderr and matrix,
    as a launch of its own would leave them, and follow-up.done saying how it ended."""
    sweep, retest = tmp_path / "sweep", tmp_path / "retest"
    retest.mkdir(parents=True)
    (retest / "pairs.txt").write_text("0 3\n0 3\n1 2\n")
    args = [*FAST, "--pairs", "pairs.txt", "--kind", "retest", "--first-round", "4"]
    thread = _answer_when_asked(sweep.mkdir() or sweep, "run\n../retest\n" + "\n".join(args))
    run = ok(run_probe(mpi, allpairs.exe, 4, sweep, *FAST, "--ask-follow-up", "60"))
    thread.join()
    assert [line["params"]["kind"] for line in run.lines] == ["sweep", "sweep"]
    assert run.matrix().complete and len(run.matrix().rounds) == 3
    assert "plan read at" in run.proc.stderr, run.proc.stderr
    done = dict(ln.split() for ln in (retest / DONE_FILE).read_text().splitlines())
    assert done["exit"] == "0" and float(done["seconds"]) > 0
    there = Run(run.proc, retest)
    lines = [json.loads(ln) for ln in (retest / "stdout").read_text().splitlines()]
    assert [(ln["params"]["kind"], ln["params"]["links_planned"]) for ln in lines] == [
        ("retest", 3), ("retest", 3)]  # fmt: skip
    m = there.matrix()
    assert m.complete and [(r.number, r.kind) for r in m.rounds] == [(4, "retest"), (5, "retest")]
    assert len(m.retests) == 3 and m.hosts == run.matrix().hosts
    assert "round 5 (2 of 2, retest)" in (retest / "stderr").read_text()


@pytest.mark.parametrize("plan", ["none\n", None])
def test_without_a_plan_to_run_the_launch_ends_as_before(
    mpi: Mpi, allpairs: Built, tmp_path: Path, plan: str | None
):
    """ "none", or no answer within the wait (an older runner): the job ends with its sweep,
    exit 0, and says why; nothing else is measured."""
    thread = _answer_when_asked(tmp_path, plan)
    run = ok(run_probe(mpi, allpairs.exe, 4, tmp_path, *FAST, "--ask-follow-up", "0.5"))
    thread.join()
    assert [line["params"]["kind"] for line in run.lines] == ["sweep", "sweep"]
    waited = "no plan within 0.5 s: nothing follows inside this launch" in run.proc.stderr
    assert waited == (plan is None) and "plan read at" not in run.proc.stderr, run.proc.stderr
    assert not list(tmp_path.rglob(DONE_FILE))


@pytest.mark.slow
def test_a_partner_lost_in_a_retest_inside_the_launch_is_the_retests_exit(
    mpi: Mpi, allpairs: Built, tmp_path: Path
):
    """A rank that stops answering in the retest: the retest's file and stderr say so and
    follow-up.done has exit 4; the sweep, finished before, stays whole."""
    sweep, retest = tmp_path / "sweep", tmp_path / "retest"
    retest.mkdir(parents=True)
    (retest / "pairs.txt").write_text("0 3\n1 2\n")
    args = [*FAST, "--pair-budget", "0.01", "--pairs", "pairs.txt", "--kind", "retest",
            "--first-round", "4", "--test-hang-rank", "3", "--test-hang-round", "4"]  # fmt: skip
    thread = _answer_when_asked(sweep.mkdir() or sweep, "run\n../retest\n" + "\n".join(args))
    run = run_probe(mpi, allpairs.exe, 4, sweep, *FAST, "--ask-follow-up", "60")
    thread.join()
    assert run.proc.returncode == 4, run.proc.stderr
    assert run.matrix().complete and not run.matrix().timed_out
    assert (retest / DONE_FILE).read_text().startswith("exit 4\n")
    assert Run(run.proc, retest).matrix().timed_out
    assert "unresponsive: rank 3 (" in (retest / "stderr").read_text()


@pytest.mark.slow
@pytest.mark.parametrize(("hang_rank", "hang_round"), [(3, 3), (1, 2)])
def test_unresponsive_partner_ends_the_job_with_exit_4(
    mpi: Mpi, allpairs: Built, tmp_path: Path, hang_rank: int, hang_round: int
):
    """Round 3 of 6 ranks pairs rank 3 with rank 0 (rank 0 waits and writes); round 2 pairs
    rank 1 with rank 2 (rank 2 reports to rank 0, which is waiting at a barrier)."""
    partner = next(a + b - hang_rank for a, b in rounds(6)[hang_round - 1] if hang_rank in (a, b))
    hang = ["--test-hang-rank", str(hang_rank), "--test-hang-round", str(hang_round)]
    run = run_probe(mpi, allpairs.exe, 6, tmp_path, *FAST, "--pair-budget", "0.01", *hang)
    assert run.proc.returncode == 4, run.proc.stderr
    assert (
        f"unresponsive: rank {hang_rank} (" in run.proc.stderr
        and f"did not answer rank {partner} (" in run.proc.stderr
        and "within 2 s" in run.proc.stderr  # 50 x 0.01 s is below the 2 s floor
    ), run.proc.stderr
    m = run.matrix()
    assert m.complete and m.timed_out
    assert [r.number for r in m.rounds] == list(range(1, hang_round + 1))
    assert [r.count for r in m.rounds] == [3] * (hang_round - 1) + [1]  # the failed pair only
    assert m.failed.tolist() == [sorted((hang_rank, partner))]
    assert file_pairs(m)[:-1] == rounds(6)[: hang_round - 1]
    measured = int((~np.isnan(m.latency)).sum())
    assert measured == 3 * (hang_round - 1)
    for line in run.lines:  # what was measured, with who stopped
        assert line["stats"]["n"] == measured and line["params"]["unresponsive"] == [hang_rank]


@pytest.mark.slow
def test_killed_rank_leaves_the_finished_rounds(mpi: Mpi, allpairs: Built, tmp_path: Path):
    """Rank 4 dies as round 4 starts; the launcher kills the others, rank 0 among them, maybe
    before its writer thread wrote round 3 (it ended a moment before): rounds 1 and 2 are
    there, whole; round 3 may be. Rank 0's work between rounds takes 50 ms more: rounds of
    milliseconds, on 2 cores loaded by other tests, left the writer no time, and the launcher's
    kill found one round written (once in a whole make test)."""
    job, job_dir = make_job(tmp_path, 6)
    run = run_probe(mpi, allpairs.exe, 6, job_dir, *FAST, "--test-coordinator-delay", "0.05",
                    "--test-die-rank", "4", "--test-die-round", "4")  # fmt: skip
    assert run.proc.returncode not in (0, 4), run.proc.stderr  # the launcher ends the job
    m = run.matrix()
    assert not m.complete and "cut short" in m.note
    kept = len(m.rounds)
    assert kept in (2, 3) and file_pairs(m) == rounds(6)[:kept], run.proc.stderr
    assert int((~np.isnan(m.bandwidth)).sum()) == 3 * kept
    # It printed no summary: the run keeps what its file holds, saying where it stopped.
    samples = AllPairsProbe().left_behind(job, job_dir)
    whole = [s for s in samples if s.params["summary"] == "matrix"]
    assert [s.metric for s in whole] == ["p2p.latency", "p2p.bandwidth"]
    assert all(s.stats.n == 3 * kept and "cut short" in s.params["partial"] for s in whole)
    assert len([s for s in samples if s.params["summary"] == "node"]) == 2 * 6


@pytest.mark.parametrize(
    ("args", "ranks", "words"),
    [
        ([], 1, "needs 2 to 65535 MPI ranks"),
        (
            [
                "--pair-budget",
                "0.00001",
                "--sweep-target",
                "0.001",
                "--bw-size",
                "8388608",
                "--window",
                "1",
            ],
            2,
            "not one message fits",
        ),
        (["--lat-iterations", "5"], 2, "go together"),
        (["--kind", "resume"], 2, "needs --pairs FILE"),
        (["--pairs", "nothing.txt"], 2, "--pairs nothing.txt: No such file"),
        (["--window", "0"], 2, "--window: expected an integer from 1 to 65536, got '0'"),
        (["--pairs-at-once", "-1"], 2, "--pairs-at-once"),
        (["--output"], 2, "--output needs a value"),
    ],
)
def test_bad_input_exits_2_with_the_reason(
    mpi: Mpi, allpairs: Built, tmp_path: Path, args: list[str], ranks: int, words: str
):
    run = run_probe(mpi, allpairs.exe, ranks, tmp_path, *args)
    assert run.proc.returncode == 2, run.proc.stderr
    assert words in run.proc.stderr and run.proc.stdout == ""


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("0 9\n", "pairs.txt:1: rank 9 is not in this job (3 ranks)"),
        ("0 1\n2 2\n", "pairs.txt:2: a node cannot pair with itself"),
        ("0 1 2\n", "pairs.txt:1: expected two nodes"),
        ("# nothing\n", "lists no pair"),
        ("nosuchhost 1\n", "host 'nosuchhost' is not in this job"),
        ("{host} 1\n", "runs 3 ranks: name the pair by rank"),
    ],
)
def test_bad_pairs_file_exits_2_naming_the_line(
    mpi: Mpi, allpairs: Built, tmp_path: Path, text: str, words: str
):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "pairs.txt").write_text(text.format(host=os.uname().nodename))
    run = run_probe(mpi, allpairs.exe, 3, tmp_path, "--pairs", "pairs.txt")
    assert run.proc.returncode == 2 and words in run.proc.stderr, run.proc.stderr


def test_help_states_the_python_defaults(allpairs: Built):
    text = subprocess.run(
        [str(allpairs.exe), "--help"], capture_output=True, text=True, timeout=10, check=True
    ).stdout
    d = AllPairsParams()
    for words in (
        f"--lat-size B           latency message, bytes (default {d.lat_size})",
        f"--bw-size B            bandwidth message, bytes (default {d.bw_size})",
        f"(default {d.window}, osu_bw's)",
        f"(default {d.pair_budget:g})",
        f"the whole sweep (default {d.sweep_target:g})",
        f"seconds (at least 2 s) stopped answering (default {d.stall_factor:g})",
        "Exit codes: 0 ok, 1 runtime error, 2 bad arguments",
    ):
        assert words in text


# ---------------------------------------------------------------------------------------------
# the Python probe


def make_job(tmp_path: Path, ranks: int, **params) -> tuple[Job, Path]:
    ctx = PlanContext(system=System(hostname="here"))
    mpi = MpiInfo(name="openmpi", version="4.1.4", flavor="openmpi")
    (draft,) = AllPairsProbe().drafts(
        AllPairsParams(**params), ctx, mpis=[mpi], ranks=ranks
    )  # fmt: skip
    job = Job(job_id="001-allpairs", probe="allpairs", argv=draft.argv, params=draft.params,
              ranks=ranks, inputs=draft.inputs)  # fmt: skip
    job_dir = tmp_path / "run" / "jobs" / job.job_id
    job_dir.mkdir(parents=True)
    return job, job_dir


def test_drafts_state_every_default_and_write_the_pairs(tmp_path: Path):
    job, _ = make_job(tmp_path, 8)
    assert job.argv[:1] == ["{exe}"] and "--pairs" not in job.argv
    for flag, value in (("--lat-size", "8"), ("--bw-size", "131072"), ("--window", "64"),
                        ("--pair-budget", "0.1"), ("--pairs-at-once", "0")):  # fmt: skip
        assert job.argv[job.argv.index(flag) + 1] == value
    # 7 rounds x 0.1 s + the pilot
    assert AllPairsProbe().expected_seconds(job) == pytest.approx(1.7)
    job, _ = make_job(tmp_path / "b", 4, pairs=[(0, 3), (3, 2)], kind="retest",
                      lat_iterations=50, bw_iterations=3, pairs_at_once=1)  # fmt: skip
    assert job.inputs == {"pairs.txt": "0 3\n3 2\n"}
    assert job.argv[job.argv.index("--pairs") + 1] == "pairs.txt"
    assert job.argv[job.argv.index("--kind") + 1] == "retest"
    assert AllPairsProbe().expected_seconds(job) == pytest.approx(1.2)
    for bad in ({"lat_iterations": 5}, {"kind": "retest"}, {"pairs": [(1, 1)], "kind": "retest"},
                {"pairs": [(0, 1)]}):  # fmt: skip
        with pytest.raises(ValueError):
            AllPairsParams(**bad)


@pytest.mark.slow
def test_parse_gives_each_node_its_median_link(mpi: Mpi, allpairs: Built, tmp_path: Path):
    job, job_dir = make_job(tmp_path, 5)
    run = ok(run_probe(mpi, allpairs.exe, 5, job_dir, *FAST))
    samples = AllPairsProbe().parse(run.proc.stdout, job, job_dir=job_dir)
    m = run.matrix()
    whole = [s for s in samples if s.params["summary"] == "matrix"]
    nodes = [s for s in samples if s.params["summary"] == "node"]
    assert [s.metric for s in whole] == ["p2p.latency", "p2p.bandwidth"]
    assert len(nodes) == 2 * 5
    rel = "jobs/001-allpairs/allpairs.bin"
    for s in samples:
        assert s.probe == "allpairs" and s.params["matrix"] == rel
        assert s.params["mpi"] == "openmpi" and s.params["node_count"] == 5
    for s in nodes:
        i = s.params["rank"]
        values = m.latency if s.metric == "p2p.latency" else m.bandwidth
        links = values[node_links(5, i)].astype(np.float64)
        assert s.value == pytest.approx(float(np.median(links)))
        assert s.stats is not None and s.stats.n == 4
        assert (s.stats.min, s.stats.max) == (float(links.min()), float(links.max()))
        assert (
            s.params["node"] == m.hosts[i] and s.unit == whole[0 if "lat" in s.metric else 1].unit
        )
    # without the job's directory only the summary is at hand
    assert len(AllPairsProbe().parse(run.proc.stdout, job)) == 2
    # the summary a stopped job's file gives (``left_behind``) is the probe's own, from a whole one
    made = AllPairsProbe().parse(summary_lines(m, "sweep"), job, job_dir=job_dir)
    for mine, probes in zip(made[:2], whole, strict=True):
        assert (mine.metric, mine.unit, mine.stats.n) == (probes.metric, probes.unit, 10)
        assert mine.value == pytest.approx(probes.value, rel=1e-6)
        assert (mine.stats.min, mine.stats.max) == pytest.approx(
            (probes.stats.min, probes.stats.max), rel=1e-6
        )
        assert mine.stats.stddev == pytest.approx(probes.stats.stddev, rel=1e-3)
    assert [s.value for s in made[2:]] == [s.value for s in nodes]


AP_SUITE = (
    'name = "ap"\n[[bench]]\nprobe = "allpairs"\nranks = 4\nmpi = "openmpi"\n'
    "params = { lat_iterations = 20, bw_iterations = 2, bw_size = 16384, window = 8, "
    "yield_when_idle = true }\n"
)


def _local_run(tmp_path: Path, assay_home: Path, config: str = "") -> Path:
    """``assay run`` of a 4-rank all-pairs suite on this machine (with ``config``): its run."""
    if not shutil.which("mpirun.openmpi"):
        pytest.skip("mpirun.openmpi not found: apt-get install openmpi-bin libopenmpi-dev")
    suite = tmp_path / "ap.toml"
    suite.write_text(AP_SUITE)
    (tmp_path / "config.toml").write_text(config)
    env = {"ASSAY_CONFIG": str(tmp_path / "config.toml")}
    run_cli("run", str(suite), home=assay_home, check=True, env=env)
    return sorted((assay_home / "runs").iterdir())[-1]


@pytest.mark.slow
def test_assay_run_keeps_the_matrix_and_stores_node_samples(tmp_path: Path, assay_home: Path):
    run = _local_run(tmp_path, assay_home)
    sweep = json.loads((run / "jobs.jsonl").read_text().splitlines()[0])["job_id"]
    job_dir = run / "jobs" / sweep
    assert read_matrix_file(job_dir / "allpairs.bin").complete
    stored = [json.loads(ln) for ln in (run / "samples.jsonl").read_text().splitlines()]
    # (a link the default rule flags on this busy machine is retested by a job of its own)
    stored = [s for s in stored if s["job_id"] == sweep]
    per_node = [s for s in stored if s["params"].get("summary") == "node"]
    assert len(stored) == 2 + 2 * 4 and len(per_node) == 8
    assert {s["params"]["matrix"] for s in stored} == {f"jobs/{sweep}/allpairs.bin"}


@pytest.mark.slow
def test_a_local_run_retests_what_the_rule_flags(tmp_path: Path, assay_home: Path):
    """The probe's follow-up hook runs on a local run too: a rule that calls out every link
    worse than the median (a tiny threshold, no factor) makes the sweep's retest a job of its
    own, naming its sweep, noted in the run, measured inside the sweep's launch, and the
    report confirms or clears each link."""
    run = _local_run(tmp_path, assay_home, "[outliers]\nthreshold = 1e-6\nlink_factor = 1.0\n")
    jobs = [json.loads(ln) for ln in (run / "jobs.jsonl").read_text().splitlines()]
    sweep = jobs[0]["job_id"]
    assert [j["job_id"] for j in jobs] == [sweep, f"{sweep}-retest1"], jobs
    assert all(j["status"] == "ok" for j in jobs)
    stored = [json.loads(ln) for ln in (run / "samples.jsonl").read_text().splitlines()]
    retests = [s for s in stored if s["job_id"] == f"{sweep}-retest1"]
    assert retests and all(s["params"]["kind"] == "retest" for s in retests)
    assert all(s["params"]["sweep_job"] == sweep for s in retests)
    notes = json.loads((run / "run.json").read_text())["notes"]
    assert any(n.startswith(f"{sweep}: ") and "more times" in n for n in notes), notes
    # measured inside the sweep's launch (one launch fewer), recorded as a job of its own
    said = f"{sweep}-retest1 was measured inside the launch of {sweep} (a launch saved)"
    assert said in notes, notes
    assert (run / "jobs" / f"{sweep}-retest1" / DONE_FILE).read_text().startswith("exit 0\n")
    assert 0 < jobs[1]["wall_time"] < jobs[0]["wall_time"], jobs
    report = run_cli("report", home=assay_home, check=True,
                     env={"ASSAY_CONFIG": str(tmp_path / "config.toml")})  # fmt: skip
    assert "retest" in report.stdout.lower() or "confirmed" in report.stdout.lower()


def test_repetitions_fold_per_node_and_nodes_compare_apart(tmp_path: Path):
    """Two repetitions of a 4-node sweep (files of their own, the pilot choosing other
    iterations): each node's figure folds over both, and no two nodes share a compare key."""
    n = 4
    rng = np.random.default_rng(5)
    samples = []
    for rep, iters in ((1, 120), (2, 97)):
        lat = rng.uniform(1e-6, 2e-6, n_links(n)).astype(np.float32)
        bw = rng.uniform(1e9, 2e9, n_links(n)).astype(np.float32)
        job_dir = tmp_path / "run" / "jobs" / f"001-allpairs-r{rep}"
        job_dir.mkdir(parents=True)
        write_sweep(job_dir / "allpairs.bin", [f"n{i}" for i in range(n)], lat, bw)
        stdout = "".join(
            json.dumps({"metric": metric, "value": float(np.median(v)), "params": {
                "size": size, "summary": "matrix", "kind": "sweep", "node_count": n,
                "timed_iterations": iters, "matrix": "allpairs.bin"},
                "stats": {"n": n_links(n)}}) + "\n"
            for metric, v, size in (("p2p.latency", lat, 8), ("p2p.bandwidth", bw, 131072))
        )  # fmt: skip
        job = Job(job_id=job_dir.name, probe="allpairs", argv=[], repetition=rep,
                  params={"mpi": "openmpi", "repetition": rep})  # fmt: skip
        samples += AllPairsProbe().parse(stdout, job, job_dir=job_dir)
    figures = fold_samples(samples).figures
    assert len(figures) == 2 * (n + 1)  # per metric: n nodes and the matrix, each over 2 reps
    assert all(len(f.values) == 2 for f in figures)
    keys = [(f.sample.metric, identity(f.sample.params)) for f in figures]
    assert len(set(keys)) == len(keys)


def test_a_follow_up_measures_with_what_the_sweeps_pilot_chose(tmp_path: Path):
    """A retest or resume compares with its sweep only when it uses the same window and
    budget: the ones the sweep's pilot chose (its file's header), not the command line's."""
    job, _ = make_job(tmp_path, 8)
    fitted = {"--window": "5", "--pair-budget": "0.75"}
    nxt = AllPairsProbe().pairs_job(job, [(0, 1)], "retest", 9, (40, 2), "retest1", fitted)
    argv = nxt.argv
    assert argv.count("--window") == 1 and argv[argv.index("--window") + 1] == "5"
    assert argv.count("--pair-budget") == 1 and argv[argv.index("--pair-budget") + 1] == "0.75"
    assert argv[argv.index("--bw-iterations") + 1] == "2"
