"""The pure parts of the Slurm launcher: tournament, outliers, placement, script, Slurm's words.

Slurm's answers are real output of Slurm 22.05 (tests/fixtures/slurm, captured from the
namespace test cluster of scripts/testcluster).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from assay.analysis.matrix.perpair import matrices
from assay.analysis.statistics.outliers import (
    LINK_MIN_FACTOR,
    OutlierRule,
    node_values,
    outlier_rule,
    outliers,
    robust_z,
    worse_factor,
)
from assay.analysis.statistics.stats import fold_samples
from assay.errors import ConfigError, LaunchError, SuiteError
from assay.launch.contract import LaunchOptions
from assay.launch.slurm.options import MpiLaunch, SlurmOptions, options_from_config
from assay.launch.slurm.scheduler import SlurmScheduler
from assay.launch.slurm.script import batch_script, sbatch_argv
from assay.launch.slurm.servers import node_address, server_step_argv, servers
from assay.launch.slurm.state import parse_show_job, settled, slurm_words
from assay.launch.slurm.steps import step_argv
from assay.model import Job, MpiInfo, Sample
from assay.probes import get_probe
from assay.probes.fio import FioParams, FioProbe
from assay.report.allpairs import matrix_table
from conftest import run_cli
from tournament import n_rounds, rounds

FIX = Path(__file__).parents[1] / "fixtures" / "slurm"
MPICH = MpiInfo(name="mpich", version="4.0.2", launcher="mpiexec.mpich", flavor="mpich")
OMPI = MpiInfo(name="openmpi", version="4.1.4", launcher="mpirun.openmpi", flavor="openmpi")


@pytest.mark.parametrize("n", range(2, 13))
def test_tournament_meets_every_pair_once_in_disjoint_rounds(n: int) -> None:
    rs = rounds(n)
    assert len(rs) == n_rounds(n) == (n - 1 if n % 2 == 0 else n)
    seen = [p for r in rs for p in r]
    assert sorted(seen) == sorted(itertools.combinations(range(n), 2))  # each pair exactly once
    for r in rs:
        nodes = [x for p in r for x in p]
        assert len(nodes) == len(set(nodes)), f"round {r} reuses a node"
        assert len(r) == n // 2


def test_tournament_of_one_node_is_empty() -> None:
    assert rounds(1) == [] and n_rounds(1) == 0


def test_robust_z_names_the_slow_link_only() -> None:
    links = {("a", "b"): 1.0e9, ("a", "c"): 1.1e9, ("a", "d"): 0.9e9,
             ("b", "c"): 6e6, ("b", "d"): 1.05e9, ("c", "d"): 0.97e9}  # fmt: skip
    bad = outliers(links, "higher")
    assert [o.key for o in bad] == [("b", "c")]
    assert bad[0].z < -bad[0].threshold
    # The same link as a latency (lower is better) would be a high value, not flagged here.
    assert outliers(links, "lower") == []


def test_log_score_survives_noise_the_linear_one_misses() -> None:
    # Healthy links vary a lot (a busy machine); one link is 50x slower.
    links = {1: 400.0, 2: 150.0, 3: 600.0, 4: 300.0, 5: 500.0, 6: 8.0}
    assert [o.key for o in outliers(links, "higher")] == [6]
    assert outliers(links, "higher", log=False) == []


def test_robust_z_zero_spread_and_few_values() -> None:
    assert set(robust_z({1: 5.0, 2: 5.0, 3: 5.0}).values()) == {0.0}
    # MAD 0 (most values equal): the mean absolute deviation takes over.
    z = robust_z({1: 5.0, 2: 5.0, 3: 5.0, 4: 5.0, 5: 50.0})
    assert z[5] > 3.5 and z[1] == 0.0
    assert outliers({1: 1.0, 2: 100.0}, "higher") == []  # two values: no majority to judge by


def test_tight_values_need_a_real_difference_too() -> None:
    # Measured on the test cluster (OpenMPI, 128 KiB, each pair alone): healthy links within
    # 3 % of each other make the MAD tiny, and one run's 12 % slow link scored z = -6.5.
    links = {1: 2650.27, 2: 2650.29, 3: 2560.80, 4: 2721.42, 5: 2648.73, 6: 2325.26}
    assert outliers(links, "higher")[0].key == 6  # the z-score alone calls it out
    assert outliers(links, "higher", min_factor=LINK_MIN_FACTOR) == []
    links[6] = 1.19  # the 10 Mbit/s link of the same cluster
    (bad,) = outliers(links, "higher", min_factor=LINK_MIN_FACTOR)
    assert bad.key == 6 and bad.factor == pytest.approx(2649.5 / 1.19)


def test_outlier_rule_from_config() -> None:
    assert outlier_rule({}) == OutlierRule()
    rule = outlier_rule({"outliers": {"link_factor": 4, "threshold": 5.0}})
    assert rule == OutlierRule(threshold=5.0, link_factor=4.0)
    for bad, words in (
        ({"link_factor": 0.5}, "link_factor = 0.5: expected a factor of 1 or more"),
        ({"threshold": 0}, "threshold = 0: expected a positive number"),
        ({"node_factor": "2"}, "node_factor = '2': expected a number"),
        ({"node_factor": True}, "node_factor = True"),
        ({"link_factr": 2}, "unknown key 'link_factr' in [outliers]"),
    ):
        with pytest.raises(ConfigError, match=re.escape(words)):
            outlier_rule({"outliers": bad})
    with pytest.raises(ConfigError, match="outliers = 3: expected a table"):
        outlier_rule({"outliers": 3})


def test_report_says_which_outliers_setting_is_wrong(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[outliers]\nlink_factor = 0.8\n")
    proc = run_cli("report", home=tmp_path / "home", env={"ASSAY_CONFIG": str(config)})
    assert proc.returncode == 2, proc.stderr
    assert "[outliers] link_factor = 0.8: expected a factor of 1 or more" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_rule_reaches_the_matrix_and_its_notes() -> None:
    hosts = ["n1", "n2", "n3", "n4"]
    values = [2650.0, 2650.3, 2560.8, 2721.4, 2648.7, 1200.0]  # one link 2.2x slow
    samples = [
        _pair_sample(a, b, v * 1e6)
        for (a, b), v in zip(itertools.combinations(hosts, 2), values, strict=True)
    ]
    (m,) = matrices(by_host(samples))
    assert [o.key for o in m.link_outliers] == [("n3", "n4")]
    (m,) = matrices(by_host(samples), OutlierRule(link_factor=4))
    assert m.link_outliers == []
    assert "at least 4× worse than the median" in " ".join(matrix_table(m).notes)


def test_worse_factor_reads_the_bad_side() -> None:
    assert worse_factor(50.0, 100.0, "higher") == 2.0
    assert worse_factor(200.0, 100.0, "higher") == 1.0  # better than the median
    assert worse_factor(150.0, 100.0, "lower") == 1.5
    assert worse_factor(0.0, 100.0, "higher") == math.inf  # a dead link
    assert worse_factor(0.0, 100.0, "lower") == 1.0


def test_node_values_point_at_the_node_whose_links_are_all_slow() -> None:
    links = {("a", "b"): 10.0, ("a", "c"): 10.0, ("a", "d"): 10.0, ("b", "c"): 1000.0,
             ("b", "d"): 1000.0, ("c", "d"): 1000.0, ("a", "e"): 10.0, ("b", "e"): 990.0,
             ("c", "e"): 1010.0, ("d", "e"): 1000.0}  # fmt: skip
    assert [o.key for o in outliers(node_values(links), "higher")] == ["a"]


def spread(job: Job) -> Job:
    """The job with the spread its probe declares (what the planner gives every job)."""
    job.spread = get_probe(job.probe).spread(job)
    return job


def place(jobs: list[Job], opts: SlurmOptions, mpis: list[MpiInfo]) -> list[Job]:
    return SlurmScheduler(opts).place([spread(j) for j in jobs], mpis)


def _p2p(mode: str, mpi: MpiInfo = MPICH) -> Job:
    return Job(
        job_id=f"001-p2p-{mode}", probe="p2p", argv=["{exe}", "--mode", mode],
        params={"mode": mode, "mpi": mpi.name}, spawn="mpi", mpi=mpi.name, ranks=2,
    )  # fmt: skip


def test_place_p2p_two_nodes_one_rank_each_and_labelled_intra_node() -> None:
    opts = SlurmOptions(nodes=4, intra_node=True)
    jobs = place([_p2p("latency")], opts, [MPICH])
    inter, intra = jobs
    assert inter.placement.indices == [0, 1] and (inter.ranks, inter.ppn) == (2, 1)
    assert inter.params["placement"] == "inter-node"
    assert intra.placement.indices == [0] and (intra.ranks, intra.ppn) == (2, 2)
    assert intra.params["placement"] == "intra-node" and intra.job_id != inter.job_id


def test_place_all_pairs_one_job_over_every_node_and_per_node_jobs() -> None:
    """The all-pairs matrix is one job, one rank on every node (the probe runs the rounds);
    per-node benches once on each node, all together; collectives over every node."""
    opts = SlurmOptions(nodes=5)
    matrix = Job(job_id="001-allpairs", probe="allpairs", argv=["{exe}"], spawn="mpi",
                 mpi="mpich", ranks=2)  # fmt: skip
    stream = Job(job_id="002-stream", probe="stream", argv=["{exe}"])
    coll = Job(job_id="003-coll", probe="coll", argv=["{exe}"], spawn="mpi", mpi="mpich",
               ranks=2, ppn=2)  # fmt: skip
    jobs = place([matrix, stream, coll], opts, [MPICH])
    (m,) = [j for j in jobs if j.probe == "allpairs"]
    assert m.placement.indices == [0, 1, 2, 3, 4] and (m.ranks, m.ppn) == (5, 1)
    assert m.params["placement"] == "all-pairs"
    (per_node,) = [j for j in jobs if j.probe == "stream"]  # one step, each node at once
    assert per_node.placement.indices == [0, 1, 2, 3, 4] and per_node.placement.each
    (c,) = [j for j in jobs if j.probe == "coll"]
    assert c.placement.indices == [0, 1, 2, 3, 4] and c.ranks == 10 and c.ppn == 2
    assert len({j.job_id for j in jobs}) == len(jobs)


def test_all_pairs_steps_share_the_cpus_of_a_step_still_dying() -> None:
    """After a lost node Slurm holds the failed step's CPUs until it gives up on the node; the
    resume must not wait for them (all-pairs steps run one at a time): --overlap, for srun and
    for the srun that starts Open MPI's daemons. Other MPI steps do not share."""
    hosts = ["n1", "n2", "n3"]
    for mpi, launch in ((MPICH, MpiLaunch("srun", "pmi2")), (OMPI, MpiLaunch("mpirun"))):
        matrix = Job(job_id="001-allpairs", probe="allpairs", argv=["{exe}"], spawn="mpi",
                     mpi=mpi.name, ranks=2)  # fmt: skip
        (m,) = place([matrix], SlurmOptions(nodes=3), [mpi])
        argv = step_argv(m, ["/c/allpairs"], hosts, mpi, launch)
        if mpi is MPICH:
            assert argv[0] == "srun" and "--overlap" in argv
        else:
            i = argv.index("plm_slurm_args")
            assert argv[i - 1 : i + 2] == ["--mca", "plm_slurm_args", "--overlap"]
        (p2p,) = place([_p2p("latency", mpi)], SlurmOptions(nodes=2), [mpi])
        other = step_argv(p2p, ["/c/p2p"], hosts[:2], mpi, launch)
        assert "--overlap" not in other


def test_an_all_pairs_run_is_the_matrix_and_asked_for_per_node_benches() -> None:
    from assay.run.request import all_pairs_suite
    from assay.suite import resolve_suite

    network, _, _ = resolve_suite("network")
    spec, notes = all_pairs_suite(network, per_node=False, pairs_at_once=2)
    assert [b.probe for b in spec.bench] == ["allpairs"]  # the built-in matrix bench
    assert spec.bench[0].params["pairs_at_once"] == 2
    assert "not run: coll, p2p, rdma" in notes[0]
    standard, _, _ = resolve_suite("standard")
    spec, _ = all_pairs_suite(standard, per_node=True, pairs_at_once=0)
    probes = [b.probe for b in spec.bench]
    assert probes[0] == "allpairs" and {"stream", "dgemm"} <= set(probes)
    assert not {"p2p", "coll", "rdma"} & set(probes)


def test_a_vdbench_host_runs_on_its_node_with_the_other_hosts_of_its_run() -> None:
    def host_job(n: int, node: int, rep: int = 1) -> Job:
        return Job(job_id=f"{n:03d}-fio-vm{node + 1}-r{rep}", probe="fio", argv=["x"],
                   params={"node_index": node, "node_group": "RndRead",
                           "vdbench_host": f"vm{node + 1}"},
                   repetition=rep)  # fmt: skip

    # planned bench by bench, each repeated: vm1-r1, vm1-r2, vm2-r1, vm2-r2
    jobs = [host_job(1, 0, 1), host_job(2, 0, 2), host_job(3, 1, 1), host_job(4, 1, 2)]
    placed = place(jobs, SlurmOptions(nodes=2), [])
    # placed repetition by repetition, the hosts of one together, each on its own node
    assert [j.job_id[:3] for j in placed] == ["001", "003", "002", "004"]
    assert [j.placement.indices for j in placed] == [[0], [1], [0], [1]]
    assert [j.placement.group for j in placed] == ["RndRead-r1"] * 2 + ["RndRead-r2"] * 2
    with pytest.raises(ConfigError, match=r"runs on node 2 of the allocation .*--nodes is 1"):
        place(jobs, SlurmOptions(nodes=1), [])


def test_all_pairs_options_are_the_runs_not_the_schedulers(tmp_path: Path) -> None:
    """--all-pairs, --per-node and --pairs-at-once ask the run for the matrix, not Slurm: the
    count is the probe's parameter (its range too), and only the all-pairs job keeps the
    allocation through a lost node (sbatch --no-kill)."""
    with pytest.raises(ConfigError, match="unknown key"):
        options_from_config({"slurm": {"pairs_at_once": 1}}, nodes=2)
    cases = [
        (["--all-pairs", "--pairs-at-once", "-1"], "pairs_at_once: Input should be greater"),
        (["--all-pairs", "--nodes", "1"], "--all-pairs needs --nodes 2 or more"),
        (["--per-node"], "--per-node needs --all-pairs"),
    ]
    for args, said in cases:
        proc = run_cli("run", "network", "--on", "slurm", "--nodes", "3", *args, "--dry-run",
                       home=tmp_path / "a")  # fmt: skip
        assert proc.returncode == 2 and said in " ".join(proc.stderr.split()), proc.stderr
    for args, no_kill in ((["--all-pairs", "--pairs-at-once", "2"], True), ([], False)):
        proc = run_cli("run", "network", "--on", "slurm", "--nodes", "3", *args, "--dry-run",
                       home=tmp_path / "a")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert ("--no-kill" in proc.stdout) is no_kill
        assert ("--pairs-at-once 2 " in proc.stdout) is bool(args)


def test_mpi_env_from_config_reaches_the_job() -> None:
    opts = SlurmOptions(nodes=2, mpi={"mpich": MpiLaunch("srun", env=(("UCX_TLS", "tcp"),))})
    (job,) = place([_p2p("latency")], opts, [MPICH])
    assert job.env["UCX_TLS"] == "tcp"


def test_step_argv_srun_and_mpirun() -> None:
    job = place([_p2p("latency")], SlurmOptions(nodes=2), [MPICH])[0]
    argv = step_argv(job, ["/c/p2p", "--mode", "latency"], ["n1", "n2"], MPICH,
                     MpiLaunch("srun", "pmi2"))  # fmt: skip
    assert argv[0] == "srun" and "--mpi=pmi2" in argv and "--nodelist=n1,n2" in argv
    assert "--ntasks=2" in argv and "--ntasks-per-node=1" in argv
    assert argv[-3:] == ["/c/p2p", "--mode", "latency"]
    job = place([_p2p("latency", OMPI)], SlurmOptions(nodes=2), [OMPI])[0]
    argv = step_argv(job, ["/c/p2p"], ["n1", "n2"], OMPI, MpiLaunch("mpirun", args=("-x", "A")))
    assert argv[:5] == ["mpirun.openmpi", "-np", "2", "--host", "n1:1,n2:1"]
    assert argv[-3:] == ["-x", "A", "/c/p2p"]
    local = Job(job_id="s", probe="stream", argv=["/c/stream"])
    assert step_argv(local, ["/c/stream"], ["n3"], None, None, 8)[-3:] == [
        "--mpi=none",
        "--cpus-per-task=8",
        "/c/stream",
    ]


def test_batch_script_quotes_awkward_paths(tmp_path: Path) -> None:
    run_dir = tmp_path / "it's a run $HOME"
    opts = SlurmOptions(nodes=2, partition="p 1", sbatch_args=["--comment=a b"])
    sb = sbatch_argv(opts, run_dir, "R1")
    assert "--partition=p 1" in sb and sb[-1].endswith("batch.sh")
    text = batch_script(run_dir=run_dir, python="/opt/py thon", sbatch=sb,
                        env={"PYTHONPATH": "/a b:/c'd"}, heartbeat_timeout=30)  # fmt: skip
    script = tmp_path / "b.sh"
    script.write_text(text)
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    last = shlex.split(text.strip().splitlines()[-1])
    assert last == ["exec", "/opt/py thon", "-m", "assay.run.runner", str(run_dir),
                    "--launcher", "slurm", "--heartbeat-timeout", "30"]  # fmt: skip
    # The environment line survives bash itself.
    out = subprocess.run(
        ["bash", "-c", "\n".join(ln for ln in text.splitlines() if ln.startswith("export"))
         + '\nprintf %s "$PYTHONPATH"'],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout == "/a b:/c'd"


def test_parse_real_scontrol_show_job() -> None:
    done = parse_show_job("19", (FIX / "scontrol_show_job_completed.txt").read_text())
    assert (done.state, done.reason, done.nodes, done.exit_code) == (
        "COMPLETED",
        "",
        "anode[1-4]",
        "0:0",
    )
    assert done.final
    pending = parse_show_job("20", (FIX / "scontrol_show_job_pending.txt").read_text())
    assert (pending.state, pending.reason, pending.final) == ("PENDING", "PartitionConfig", False)
    cancelled = parse_show_job("20", (FIX / "scontrol_show_job_cancelled.txt").read_text())
    assert cancelled.state == "CANCELLED" and cancelled.final


def test_a_job_still_completing_after_its_script_exited_0_is_done() -> None:
    """The real line with JobState=COMPLETING (as slurmctld shows a job whose step a dead node
    still holds): for a --no-kill job (all-pairs; the launcher applies ``settled`` to those
    only, others may still end NODE_FAIL) exit 0 is COMPLETED, saying why; a non-zero exit
    waits for Slurm's own final state (TIMEOUT, CANCELLED say more than FAILED)."""
    text = (FIX / "scontrol_show_job_completed.txt").read_text()
    completing = settled(
        parse_show_job("19", text.replace("JobState=COMPLETED", "JobState=COMPLETING"))
    )
    assert completing.final and completing.state == "COMPLETED"
    assert "still ending the job's processes" in completing.reason
    killed = text.replace("JobState=COMPLETED", "JobState=COMPLETING").replace(
        "ExitCode=0:0", "ExitCode=0:15"
    )
    waits = settled(parse_show_job("19", killed))
    assert waits.state == "COMPLETING" and not waits.final


def test_slurm_words_quote_sbatch_refusal() -> None:
    words = slurm_words((FIX / "sbatch_invalid_partition.stderr").read_text())
    assert words == "invalid partition specified: nope; Batch job submission failed: " \
        "Invalid partition name specified"  # fmt: skip


def test_config_refuses_pmix_and_unknown_keys() -> None:
    with pytest.raises(ConfigError, match="pmix"):
        options_from_config({"slurm": {"mpi": {"x": {"srun_mpi": "pmix"}}}})
    with pytest.raises(ConfigError, match="unknown key"):
        options_from_config({"slurm": {"partitoin": "a"}})
    opts = options_from_config({"slurm": {"partition": "a", "nodes": 3}}, partition="b")
    assert (opts.partition, opts.nodes) == ("b", 3)


def _pair_sample(a: str, b: str, value: float, size: int = 65536) -> Sample:
    return Sample.make("p2p", "p2p.bandwidth", value, {"size": size, "hosts": [a, b],
                       "placement": "all-pairs", "mpi": "mpich"})  # fmt: skip


def by_host(samples: list[Sample]) -> list:
    return fold_samples(samples).by_host


def test_matrix_from_samples_names_the_link() -> None:
    hosts = ["n1", "n2", "n3", "n4"]
    samples = [
        _pair_sample(a, b, 6e6 if (a, b) == ("n2", "n3") else 4e8 + 1e7 * i)
        for i, (a, b) in enumerate(itertools.combinations(hosts, 2))
    ]
    samples.append(_pair_sample("n1", "n2", 1.0, size=1))  # smaller size: not the figure
    (m,) = matrices(by_host(samples))
    assert m.size == 65536 and m.hosts == hosts
    assert m.value("n3", "n2") == 6e6
    assert [o.key for o in m.link_outliers] == [("n2", "n3")]
    for r, pairs in enumerate(rounds(4), start=1):
        for s in samples:
            if tuple(hosts.index(h) for h in s.params["hosts"]) in pairs:
                s.params["round"] = r
    # stored without concurrent_pairs: 4 nodes, 2 pairs a round
    assert matrices(by_host(samples))[0].concurrent == 2
    for s in samples:
        s.params["concurrent_pairs"] = 1
    assert matrices(by_host(samples))[0].concurrent == 1


def test_matrix_takes_each_pairs_median_over_its_repetitions() -> None:
    hosts = ["n1", "n2", "n3", "n4"]
    samples = []
    for rep in (1, 2, 3):
        for i, (a, b) in enumerate(itertools.combinations(hosts, 2)):
            s = _pair_sample(a, b, 4e8 + 1e7 * i + 1e6 * rep)
            s.params["repetition"] = rep
            samples.append(s)
    folded = fold_samples(samples)
    assert len(folded.figures) == 1  # one measurement: the pairs differ only in their hosts
    assert len(folded.by_host) == 6 and {f.repetitions for f in folded.by_host} == {3}
    (m,) = matrices(folded.by_host)
    assert m.value("n1", "n2") == 4e8 + 2e6  # the median of 4e8 + 1e6, 2e6, 3e6
    assert m.repetitions == (3, 3)
    assert m.widest == (("n1", "n2"), pytest.approx((4e8 + 3e6) / (4e8 + 1e6)))
    notes = " ".join(matrix_table(m).notes)
    assert "the median of its repetitions (n = 3)" in notes and "(n1–n2)" in notes
    from assay.report.plots.of_run import allpairs_charts

    (chart,) = allpairs_charts([m])  # its heatmap says n too
    assert "n = 3 a link" in chart.title


def test_per_node_names_the_slow_node() -> None:
    from assay.analysis.derived.pernode import per_node

    triad = {"n1": 20e9, "n2": 21e9, "n3": 19.5e9, "n4": 4e9, "n5": 20.5e9}
    samples = [
        Sample.make("stream", "memory.triad", v, {"hosts": [h], "placement": "per-node"})
        for h, v in triad.items()
    ]
    samples.append(Sample.make("stream", "memory.triad", 1.0, {"hosts": ["n1"]}))  # not per-node
    (fig,) = per_node(by_host(samples))
    assert fig.values == triad
    assert [o.key for o in fig.outliers] == ["n4"]


def test_finish_records_the_jobs_a_dead_allocation_did_not_reach(tmp_path: Path) -> None:
    from assay.launch import BatchState
    from assay.model import JobResult, System
    from assay.run.front import finish
    from assay.store import RunStore

    writer = RunStore(tmp_path).create(suite="s", suite_text="", system=System(), argv=[])
    writer.info.batch = {"launcher": "slurm", "job_id": "42"}
    jobs = [Job(job_id=f"00{i}-p2p", probe="p2p", argv=["x"]) for i in (1, 2)]
    writer.record(JobResult("001-p2p", "ok", 0, 1.0, ["x"], scheduler_state="COMPLETED"), [])
    state = BatchState("42", "NODE_FAIL", reason="NodeFail", exit_code="0:0", final=True)
    (lost,) = finish(writer, jobs, state, SlurmScheduler(SlurmOptions()))
    assert lost.job_id == "002-p2p" and lost.scheduler_state == "NODE_FAIL"
    assert "NODE_FAIL" in lost.reason and lost.status == "failed"
    loaded = RunStore(tmp_path).load()
    assert loaded.info.status == "failed" and loaded.info.batch["state"] == "NODE_FAIL"
    assert [r.job_id for r in loaded.results] == ["001-p2p", "002-p2p"]  # the first is kept


def _fio_job(**params) -> Job:
    spec = {"hosts": [], "target": "/shared/t", "mode": "workloads"}
    return Job(job_id="001-fio", probe="fio", argv=["py", "-m", "assay.drivers.fio", "--spec",
               json.dumps(spec)], params={"clients": "nodes", **params})  # fmt: skip


def test_place_multi_client_fio_one_job_on_every_node() -> None:
    """fio's keys of [slurm] (declared by fio, not by the launcher) reach its servers."""
    config = {"slurm": {"nodes": 3, "fio_network": "10.9.0.0/16", "fio_port": 9000}}
    launcher = SlurmScheduler.configured(config, LaunchOptions())
    per_node = Job(job_id="002-fio", probe="fio", argv=["x"])
    jobs = launcher.place([spread(j) for j in [_fio_job(), per_node]], [])
    assert jobs[0].placement.indices == [0, 1, 2] and jobs[0].nodes == 3
    assert jobs[0].params["placement"] == "multi-client"
    assert jobs[0].placement.servers == {"port": 9000, "network": "10.9.0.0/16"}
    # without clients = "nodes" fio stays a per-node measurement
    assert [j.placement.indices for j in jobs[1:]] == [[0], [1], [2]]


def test_fio_server_step_and_client_hosts() -> None:
    server = FioProbe().server_argv(_fio_job())
    argv = server_step_argv("001-fio", ["n1", "n2"], "/py", Path("/run/s"), 8765, "10.0.0.0/8",
                            server)  # fmt: skip
    assert argv[:2] == ["srun", "--job-name=001-fio-servers"]
    # one server per node, sharing the CPUs with the client's step
    for flag in ("--nodes=2", "--nodelist=n1,n2", "--ntasks=2", "--ntasks-per-node=1",
                 "--overlap", "--mpi=none"):  # fmt: skip
        assert flag in argv
    assert argv[argv.index("-m") + 1 :] == [
        "assay.launch.slurm.servers", "8765", "/run/s", "--network", "10.0.0.0/8",
        "--", "fio", "--server={family}:{address},{port}",
    ]  # fmt: skip
    job = _fio_job()
    new = FioProbe().served(job, ["10.1.0.1,8765", "10.1.0.2,8765"])
    spec = json.loads(new.argv[new.argv.index("--spec") + 1])
    assert spec["hosts"] == ["10.1.0.1,8765", "10.1.0.2,8765"] and spec["target"] == "/shared/t"
    assert new.env["ASSAY_FIO_SERVERS"] == "launcher" and job.argv != new.argv


def test_node_test_address_inside_the_given_network() -> None:
    # the loopback interface is the one address every machine has
    assert node_address("127.0.0.0/8") == "127.0.0.1"
    with pytest.raises(LaunchError, match=r"no interface address in 198\.51\.100\.0/24"):
        node_address("198.51.100.0/24")  # TEST-NET-2 (documentation only)


def test_rdma_server_on_one_node_client_on_the_other() -> None:
    server = ["ib_send_lat", "-a", "-d", "mlx5_0", "-p", "18515"]
    job = Job(job_id="004-rdma", probe="rdma", argv=["py", "-m", "assay.drivers.pair",
              "--server", json.dumps(server), "--client", json.dumps([*server, "localhost"])],
              skip_reason="no RDMA device")  # fmt: skip
    (placed,) = place([job], SlurmOptions(nodes=3), [])
    assert placed.placement.indices == [0, 1] and placed.params["placement"] == "inter-node"
    argv = step_argv(placed, placed.argv, ["anode1", "anode2"], None, None, 2)
    assert argv[:3] == ["py", "-m", "assay.drivers.pair"]  # runs on the runner's node
    srv = json.loads(argv[argv.index("--server") + 1])
    cli = json.loads(argv[argv.index("--client") + 1])
    assert srv[0] == "srun" and "--nodelist=anode2" in srv and "--overlap" in srv
    assert srv[srv.index("--mpi=none") + 1 :] == server
    assert cli[0] == "srun" and "--nodelist=anode1" in cli and "--ntasks=1" in cli
    assert cli[cli.index("--mpi=none") + 1 :] == [*server, "anode2"]  # the client names it
    (alone,) = place([job], SlurmOptions(nodes=1), [])
    assert alone.placement.indices == [0]  # one node: server and client on it (loopback)


def test_dry_run_plans_rdma_across_two_nodes_and_fio_on_all(tmp_path: Path) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text(
        'name = "s"\n[[bench]]\nprobe = "rdma"\n[[bench]]\nprobe = "fio"\n'
        f'params = {{ clients = "nodes", workloads = ["randread-8k"], target = "{tmp_path}" }}\n'
    )
    proc = run_cli("run", str(suite), "--on", "slurm", "--nodes", "3", "--dry-run",
                   home=tmp_path / "home")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    (rdma,) = [x for x in lines if "-rdma-" in x.split(":")[0]]
    assert ": nodes [0, 1] x ppn 1" in rdma and "assay.drivers.pair" in rdma
    (fio,) = [x for x in lines if "-fio-" in x.split(":")[0]]
    assert ": nodes [0, 1, 2] x ppn 1" in fio and "[with" not in fio


def test_fio_clients_nodes_refuses_named_hosts_too() -> None:
    with pytest.raises(SuiteError, match="not both"):
        FioProbe().drafts(
            FioParams(clients="nodes", hosts=["10.0.0.1"], workloads=["randread-8k"]),
            None, mpis=[], ranks=None,  # type: ignore[arg-type]
        )  # fmt: skip


def test_fio_servers_without_srun_is_a_launch_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no srun there
    started = servers("001-fio", ["n1"], tmp_path / "servers", ["fio", "--server"], port=8765)
    with pytest.raises(LaunchError, match="fio servers: cannot run srun"), started:
        pass


def test_a_per_node_pass_of_an_output_only_probe_is_one_step(tmp_path: Path) -> None:
    """STREAM on every node: one job, one step over every node, each node's output in its own
    file; a probe that writes more (fio) or an MPI job (HPL) stays one step per node."""
    from assay.run.outputs import parse_each_node

    stream = Job(job_id="001-stream", probe="stream", argv=["{exe}"])
    fio = Job(job_id="002-fio", probe="fio", argv=["x"])
    hpl = Job(job_id="003-hpl", probe="hpl", argv=["{exe}"], spawn="mpi", mpi="mpich")
    jobs = place([stream, fio, hpl], SlurmOptions(nodes=3), [MPICH])
    (one,) = [j for j in jobs if j.probe == "stream"]
    assert one.placement.each and one.placement.indices == [0, 1, 2] and one.nodes == 3
    assert len([j for j in jobs if j.probe == "fio"]) == 3
    assert len([j for j in jobs if j.probe == "hpl"]) == 3
    argv = step_argv(one, ["/c/stream"], ["a1", "a2", "a3"], None, None, 4)
    assert "--ntasks=3" in argv and "--ntasks-per-node=1" in argv
    assert "--output=node-%N.stdout" in argv and "--kill-on-bad-exit=0" in argv
    assert argv[-1] == "/c/stream"
    # each node's output read on its own; a node that printed nothing is named
    line = '{"metric": "memory.triad", "value": 5e10, "params": {"kernel": "triad"}}\n'
    (tmp_path / "node-a1.stdout").write_text(line)
    (tmp_path / "node-a2.stdout").write_text(line.replace("5e10", "2e10"))
    (tmp_path / "node-a3.stderr").write_text("stream: out of memory\n")
    one.params["hosts"] = ["a1", "a2", "a3"]
    samples, problem = parse_each_node(one, tmp_path)
    assert [(s.params["node"], s.params["hosts"], s.value) for s in samples] == [
        ("a1", ["a1"], 5e10),
        ("a2", ["a2"], 2e10),
    ]
    assert problem.startswith("on 1 of 3 nodes: a3: printed no measurement")
    assert "out of memory" in problem


def test_a_slurm_conf_that_names_no_file_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch
) -> None:
    """Slurm's commands retry a missing SLURM_CONF for 60 s: sbatch was cut off at 30 s and
    the run said "is slurmctld reachable?", which was not the cause."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sbatch", "scontrol", "scancel"):  # present: the check after them is tested
        (bin_dir / tool).write_text("#!/bin/sh\nsleep 60\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "none.conf"))
    scheduler = SlurmScheduler(SlurmOptions())
    with pytest.raises(LaunchError, match=r"SLURM_CONF=\S+none.conf names no file") as refused:
        scheduler.require()
    assert "unset it" in (refused.value.hint or "")
    monkeypatch.setenv("SLURM_CONF", str(bin_dir / "sbatch"))  # a file: the front end is fine
    scheduler.require()
