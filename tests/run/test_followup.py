"""What an all-pairs sweep leaves to measure (probes/_allpairs_followup.py): a resume
without a lost node, measuring only the pairs never measured, and a retest of the flagged
links and nodes. Matrices are written by the probe's own file writer and read back by its
reader (the runner reads them so)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from assay.analysis.statistics.outliers import OutlierRule
from assay.condensed import link_index, n_links
from assay.launch import LaunchOutcome
from assay.parsers.allpairs_file import read_matrix_file, write_sweep
from assay.probes._allpairs_followup import (
    RETESTS,
    Sweep,
    lost_ranks,
    plan_follow_up,
    resume,
)
from assay.probes.base import Ended
from assay.run.followup import flagger

HOSTS = [f"n{i}" for i in range(8)]
RULE = flagger(OutlierRule())  # the default [outliers] rule, as the run hands it to the probe


def _healthy(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lat = (2e-6 * rng.lognormal(0, 0.03, n_links(n))).astype(np.float32)
    bw = (10e9 * rng.lognormal(0, 0.03, n_links(n))).astype(np.float32)
    return lat, bw


def _sweep(tmp_path: Path, lat, bw, **kw) -> Sweep:
    path = tmp_path / "allpairs.bin"
    write_sweep(path, HOSTS, lat, bw, **kw)
    return Sweep.of(read_matrix_file(path))


def test_a_healthy_complete_sweep_needs_nothing_more(tmp_path: Path) -> None:
    lat, bw = _healthy(8)
    assert plan_follow_up(_sweep(tmp_path, lat, bw), [], RULE) is None


def test_a_slow_link_is_retested_three_times_with_the_sweeps_iterations(tmp_path: Path) -> None:
    lat, bw = _healthy(8)
    k = link_index(8, 2, 5)
    bw[k] = bw[k] / 10  # throttled
    sweep = _sweep(tmp_path, lat, bw)
    follow = plan_follow_up(sweep, [], RULE)
    assert follow is not None and follow.kind == "retest"
    assert follow.pairs.count((2, 5)) == RETESTS  # each retest a round of its own
    assert follow.hosts == HOSTS and follow.first_round == 8  # after the 7 sweep rounds
    assert follow.iterations == sweep.iterations
    # one retest per sweep: the next call plans nothing
    assert plan_follow_up(sweep, [], RULE) is None


def test_a_slow_node_gets_a_few_of_its_links_retested(tmp_path: Path) -> None:
    lat, bw = _healthy(8)
    for j in range(8):
        if j != 6:
            bw[link_index(8, min(6, j), max(6, j))] /= 3  # every link of n6: the node
    follow = plan_follow_up(_sweep(tmp_path, lat, bw), [], RULE)
    assert follow is not None
    once = set(follow.pairs)
    assert all(6 in p for p in once) and 1 <= len(once) <= 7


def test_a_lost_node_resumes_the_pairs_never_measured_without_it(tmp_path: Path) -> None:
    lat, bw = _healthy(8)
    sweep = _sweep(tmp_path, lat, bw, rounds=3, end=False)  # cut after 3 of 7 rounds
    measured = int(np.count_nonzero(~np.isnan(sweep.latency)))
    assert measured == 3 * 4
    follow = plan_follow_up(sweep, ["n4"], RULE)
    assert follow is not None and follow.kind == "resume"
    assert follow.hosts == [h for h in HOSTS if h != "n4"]
    # every pair left among the 7 nodes, by their ranks in the new job, none twice
    index = {h: i for i, h in enumerate(HOSTS)}
    got = {tuple(sorted((follow.hosts[a], follow.hosts[b]))) for a, b in follow.pairs}
    assert len(got) == len(follow.pairs)
    for a, b in got:
        k = link_index(8, index[a], index[b])
        assert np.isnan(sweep.latency[k]) and "n4" not in (a, b)
    assert len(got) == n_links(7) - sum(
        1 for i in range(8) for j in range(i + 1, 8)
        if 4 not in (i, j) and not np.isnan(sweep.latency[link_index(8, i, j)])
    )  # fmt: skip
    assert follow.first_round == 4 and sweep.lost == ["n4"]


def test_a_resume_fills_the_sweep_then_its_flagged_links_are_retested(tmp_path: Path) -> None:
    from assay.parsers.allpairs_file import MatrixWriter

    lat, bw = _healthy(8)
    k = link_index(8, 1, 3)
    bw[k] /= 10
    sweep = _sweep(tmp_path, lat, bw, rounds=2, end=False)
    unmeasured_n7 = [i for i in range(7) if np.isnan(sweep.latency[link_index(8, i, 7)])]
    follow = resume(sweep, ["n7"])
    assert follow is not None
    # the resume job's file, as the probe writes it: its own hosts, its ranks
    path = tmp_path / "resume.bin"
    with open(path, "wb") as f:
        w = MatrixWriter(f, follow.hosts)
        a = np.array([p[0] for p in follow.pairs])
        b = np.array([p[1] for p in follow.pairs])
        index = {h: i for i, h in enumerate(HOSTS)}
        where = np.array([index[h] for h in follow.hosts])
        kk = link_index(8, where[a], where[b])
        w.round(3, a, b, lat[kk], bw[kk], kind="resume", t_start=0.0, wall_s=0.1)
        w.end()
    sweep.add(read_matrix_file(path))
    # n7's links never measured stay so; every other link is measured now
    assert unmeasured_n7 and all(
        np.isnan(sweep.latency[link_index(8, i, 7)]) for i in unmeasured_n7
    )
    others = [link_index(8, i, j) for i in range(7) for j in range(i + 1, 7)]
    assert not np.isnan(sweep.latency[others]).any()
    retest = plan_follow_up(sweep, [], RULE)
    assert retest is not None and retest.kind == "retest" and (1, 3) in retest.pairs
    assert "n7" not in retest.hosts


def test_lost_ranks_read_the_probes_summary() -> None:
    params = [{"summary": "matrix", "unresponsive": [3]}, {"summary": "node"}]
    assert lost_ranks(params) == [3]
    assert lost_ranks([{"summary": "matrix"}]) == []


@pytest.mark.parametrize("left", [1, 0])
def test_no_resume_with_fewer_than_two_nodes_left(tmp_path: Path, left: int) -> None:
    lat, bw = _healthy(8)
    sweep = _sweep(tmp_path, lat, bw, rounds=1, end=False)
    assert resume(sweep, HOSTS[left:] if left else HOSTS) is None


def test_refused_connects_resume_every_pair_they_took_on_every_node(tmp_path: Path) -> None:
    """A sweep cut short because connects were refused (the neighbour table full, a backlog
    overflow) lost no node: the pairs never measured are measured again on all the nodes,
    none left out as 'lost' (the issue's 32-node run lost every pair that way)."""
    lat, bw = _healthy(8)
    sweep = _sweep(tmp_path, lat, bw, rounds=3, end=False)
    follow = plan_follow_up(sweep, [], RULE, refused=True)
    assert follow is not None and follow.kind == "resume" and follow.hosts == HOSTS
    assert len(follow.pairs) == n_links(8) - 3 * 4
    assert "connects refused" in follow.why and sweep.lost == []


def _ended(tmp_path: Path, job, status: str = "ok", hosts=HOSTS, samples=()) -> Ended:
    from assay.model import JobResult

    directory = tmp_path / job.job_id
    result = JobResult(job.job_id, status, 0 if status == "ok" else 4, 1.0, list(job.argv))
    return Ended(job, result, list(samples), list(hosts), directory)


def test_the_probes_hook_resumes_without_the_lost_node_then_retests_once(tmp_path: Path) -> None:
    """``AllPairsProbe.follow_up``, as a run calls it after each job: the chain so far is read
    back from the jobs' files (the sweep cut short by n4, which its summary names), a resume on
    the 7 nodes left, then a retest of the slow link, then nothing."""
    from assay.model import Job, Sample
    from assay.parsers.allpairs_file import MatrixWriter
    from assay.probes.allpairs import AllPairsParams, AllPairsProbe, probe_argv
    from assay.probes.base import FollowUpContext

    lat, bw = _healthy(8)
    bw[link_index(8, 1, 3)] /= 10
    argv = ["{exe}", *probe_argv(AllPairsParams())]
    sweep_job = Job(job_id="001-allpairs-openmpi", probe="allpairs", argv=argv,
                    params={"mpi": "openmpi"}, ranks=8)  # fmt: skip
    (tmp_path / sweep_job.job_id).mkdir()
    write_sweep(tmp_path / sweep_job.job_id / "allpairs.bin", HOSTS, lat, bw, rounds=3, end=False)
    summary = Sample.make("allpairs", "p2p.latency", 2e-6, {"summary": "matrix",
                                                            "unresponsive": [4]})  # fmt: skip
    notes: list[str] = []
    ctx = FollowUpContext(flag=RULE, responsive=list, connects_refused=lambda e: False,
                          note=notes.append)  # fmt: skip
    probe = AllPairsProbe()
    chain = [_ended(tmp_path, sweep_job, "failed", samples=[summary])]
    [resumed] = probe.follow_up(chain, ctx)
    left = [h for h in HOSTS if h != "n4"]
    assert resumed.job_id == "001-allpairs-openmpi-resume1" and resumed.ranks == 7
    assert resumed.params["hosts"] == left and resumed.params["lost_nodes"] == ["n4"]
    assert resumed.params["kind"] == "resume" and resumed.params["sweep_job"] == sweep_job.job_id
    assert notes and "n4 lost" in notes[0] and resumed.job_id in notes[0]
    # the resume measured its pairs (the probe's file: its own hosts, its ranks)
    pairs = [tuple(map(int, ln.split())) for ln in resumed.inputs["pairs.txt"].splitlines()]
    a, b = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    where = np.array([HOSTS.index(h) for h in left])
    k = link_index(8, where[a], where[b])
    (tmp_path / resumed.job_id).mkdir()
    with open(tmp_path / resumed.job_id / "allpairs.bin", "wb") as f:
        w = MatrixWriter(f, left)
        w.round(4, a, b, lat[k], bw[k], kind="resume", t_start=0.0, wall_s=0.1)
        w.end()
    chain.append(_ended(tmp_path, resumed, hosts=left))
    [retest] = probe.follow_up(chain, ctx)
    assert retest.job_id == "001-allpairs-openmpi-retest2" and retest.params["kind"] == "retest"
    assert "n4" not in retest.params["hosts"] and retest.params["lost_nodes"] == ["n4"]
    assert "1 3\n" in retest.inputs["pairs.txt"]  # n1-n3, ranks 1 and 3 of the 7 left
    chain.append(_ended(tmp_path, retest, hosts=retest.params["hosts"]))
    assert probe.follow_up(chain, ctx) == []  # one retest per sweep


def test_a_job_that_ended_well_without_a_flagged_link_has_no_follow_up(tmp_path: Path) -> None:
    from assay.model import Job
    from assay.probes.allpairs import AllPairsProbe
    from assay.probes.base import FollowUpContext

    lat, bw = _healthy(8)
    job = Job(job_id="001-allpairs", probe="allpairs", argv=["x"], params={}, ranks=8)
    (tmp_path / job.job_id).mkdir()
    write_sweep(tmp_path / job.job_id / "allpairs.bin", HOSTS, lat, bw)
    ctx = FollowUpContext(flag=RULE, responsive=list, connects_refused=lambda e: False,
                          note=print)  # fmt: skip
    assert AllPairsProbe().follow_up([_ended(tmp_path, job)], ctx) == []
    missing = Job(job_id="002-allpairs", probe="allpairs", argv=["x"], params={}, ranks=8)
    assert AllPairsProbe().follow_up([_ended(tmp_path, missing, "failed")], ctx) == []


def _inside(tmp_path: Path, notes: list[str]):
    from assay.probes.base import FollowUpContext
    from assay.run.followup import Inside

    def prepare(job) -> Path:  # as a run saves a job where it would run
        where = tmp_path / job.job_id
        where.mkdir(exist_ok=True)
        for name, text in job.inputs.items():
            (where / name).write_text(text)
        return where

    ctx = FollowUpContext(flag=RULE, responsive=list, connects_refused=lambda e: False,
                          note=notes.append)  # fmt: skip
    return Inside(ctx, prepare)


def _sweep_job(tmp_path: Path, slow: bool = True):
    """An 8-node sweep as it stands when it asks: its file written (one link slow), its job."""
    from assay.model import Job
    from assay.probes.allpairs import AllPairsParams, probe_argv

    lat, bw = _healthy(8)
    if slow:
        bw[link_index(8, 2, 5)] /= 10
    job = Job(job_id="001-allpairs-openmpi", probe="allpairs", ranks=8, nodes=8, params={},
              argv=["{exe}", *probe_argv(AllPairsParams())])  # fmt: skip
    here = tmp_path / job.job_id
    here.mkdir()
    write_sweep(here / "allpairs.bin", HOSTS, lat, bw)
    return job, here


def test_a_running_sweep_that_asks_gets_its_retest_to_measure_in_its_launch(
    tmp_path: Path,
) -> None:
    """``Inside``: while a sweep runs, nothing until it asks (``follow-up.ask``); then, once,
    the plan for the retest the probe's hook returns ("run", its directory, its arguments),
    the retest saved with its pairs where it would run; it is adopted only once its
    ``follow-up.done`` says how it ended, and the sweep's launch then leaves it its seconds."""
    from assay.probes.allpairs import AllPairsProbe
    from assay.probes.base import ASK_FILE, DONE_FILE, PLAN_FILE

    job, here = _sweep_job(tmp_path)
    notes: list[str] = []
    inside = _inside(tmp_path, notes)
    assert AllPairsProbe().asks(job)[0] == "--ask-follow-up"
    inside.answer(job, here)
    assert not (here / PLAN_FILE).exists()  # not asked yet
    (here / ASK_FILE).touch()
    inside.answer(job, here)
    run, where, *words = (here / PLAN_FILE).read_text().splitlines()
    [retest] = AllPairsProbe().follow_up([_ended(tmp_path, job)], inside.ctx)
    assert (run, where, words) == ("run", f"../{retest.job_id}", retest.argv[1:])
    assert (tmp_path / retest.job_id / "pairs.txt").read_text() == retest.inputs["pairs.txt"]
    assert any("more times" in n for n in notes)
    (here / PLAN_FILE).write_text("as answered\n")
    inside.answer(job, here)
    assert (here / PLAN_FILE).read_text() == "as answered\n"  # answered once
    launch = LaunchOutcome(0, 10.0, hosts=["h"])
    assert inside.split(job, here, launch) == launch  # the launch ended before the retest began
    assert inside.adopts(retest) is None  # so the retest gets a launch of its own
    there = tmp_path / retest.job_id
    (there / "stdout").touch()  # it began there (the probe made its stdout), and ended:
    (there / DONE_FILE).write_text("exit 0\nseconds 2.5\n")
    own = inside.split(job, here, launch)
    assert (own.exit_code, own.wall_time, own.hosts) == (0, 7.5, ["h"])
    assert inside.holds(retest)
    tail, began, by = inside.adopts(retest)
    assert (tail.exit_code, tail.wall_time, tail.interrupted, by) == (0, 2.5, False, job.job_id)
    assert began == (here / PLAN_FILE).stat().st_mtime
    assert not inside.holds(retest) and inside.adopts(retest) is None  # recorded once
    assert AllPairsProbe().asks(retest) == []  # a retest has no follow-up to ask for


def test_a_launch_stopped_in_its_retest_keeps_the_sweep_whole_and_the_retest_stopped(
    tmp_path: Path,
) -> None:
    """Ctrl-C (or the timeout) while the launch measures the retest: the sweep, finished
    before, ended well; the retest, cut short, is recorded as stopped (its rounds kept)."""
    from assay.probes.allpairs import AllPairsProbe
    from assay.probes.base import ASK_FILE

    job, here = _sweep_job(tmp_path)
    (here / ASK_FILE).touch()
    inside = _inside(tmp_path, [])
    inside.answer(job, here)
    [retest] = AllPairsProbe().follow_up([_ended(tmp_path, job)], inside.ctx)
    (tmp_path / retest.job_id / "stdout").touch()
    stopped = LaunchOutcome(None, 30.0, interrupted=True, stop_signal=2)
    own = inside.split(job, here, stopped)
    assert own.exit_code == 0 and not own.interrupted and own.wall_time <= 30.0
    tail, _, _ = inside.adopts(retest)
    assert tail.interrupted and tail.stop_signal == 2 and tail.exit_code is None


def test_a_sweep_with_nothing_to_retest_is_told_none(tmp_path: Path) -> None:
    """Nothing flagged: the plan is "none" (the launch ends as it would have); a retest on
    other ranks (after a lost node) or a resume is never measured inside."""
    from assay.model import Job
    from assay.probes.allpairs import AllPairsProbe
    from assay.probes.base import ASK_FILE, PLAN_FILE

    job, here = _sweep_job(tmp_path, slow=False)
    (here / ASK_FILE).touch()
    inside = _inside(tmp_path, [])
    inside.answer(job, here)
    assert (here / PLAN_FILE).read_text() == "none\n"
    assert not inside.handed
    fewer = Job(job_id="001-allpairs-retest1", probe="allpairs", argv=job.argv, ranks=7,
                nodes=7, params={"kind": "retest"})  # fmt: skip
    assert AllPairsProbe().inside(job, fewer) is None
    resume = dataclasses.replace(job, job_id="001-allpairs-resume1", params={"kind": "resume"})
    assert AllPairsProbe().inside(job, resume) is None
