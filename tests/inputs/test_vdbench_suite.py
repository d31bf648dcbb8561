"""Jobs run together (fio probe ``groups``) and Vdbench parameter files as assay suites.

The seed's Vdbench files come from ``tests/fixtures/vdbench/seed_files.py``. Pure tests first;
the real fio runs (a translated seed file through ``assay run``, a group's curve through the
driver) are marked slow.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from assay.drivers.fio.__main__ import main as driver_main
from assay.drivers.fio.cells import cells_of
from assay.drivers.fio.runner import EXIT_OK
from assay.drivers.fio.spec import FILL_RATE_ASSUMED, GRACE_S, RUN_OVERHEAD_S, DriverSpec, items_of
from assay.errors import ParseError, SuiteError
from assay.fio.job import job_file
from assay.model import System
from assay.plan import plan
from assay.probes import PlanContext, get_probe
from assay.probes.fio import FioParams, driver_spec
from assay.suite.loader import load_suite
from assay.vdbench.suite import suite_toml, vdbench_suite
from conftest import run_cli

FIXTURES = Path(__file__).parents[1] / "fixtures" / "vdbench"
_spec = importlib.util.spec_from_file_location("seed_files", FIXTURES / "seed_files.py")
assert _spec is not None and _spec.loader is not None
seed_files = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(seed_files)

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
MIB = 2**20
SMALL = {"elapsed": 2, "warmup": 1, "size": 4 * MIB}


def _spec_with(groups: list, **kw) -> DriverSpec:
    base = {"mode": "workloads", "workloads": [], "size": MIB, "runtime": 1, "ramp_time": 0,
            "numjobs": 1, "iodepth": 4, "groups": groups}  # fmt: skip
    return DriverSpec.model_validate({**base, **kw})


READ = {"name": "r", "rw": "randread", "bs": 4096, "iodepth": 8}
WRITE = {"name": "w", "rw": "randwrite", "bs": 8192, "numjobs": 2, "iodepth": 1}


# ---------------------------------------------------------------------------- groups


def test_a_group_is_one_job_file_whose_jobs_start_together():
    (item,) = items_of(_spec_with([{"name": "G", "jobs": [READ, WRITE]}]), "/d", None)
    assert item.group and item.name == "G" and [j.name for j in item.jobs] == ["r", "w"]
    text = job_file(list(item.jobs))
    sections = re.split(r"^\[", text, flags=re.M)[1:]
    assert [s.split("]")[0] for s in sections] == ["r", "w"]
    for section in sections:
        lines = section.splitlines()
        # one reporting group per job (fio HOWTO new_group), nobody waits (no stonewall)
        assert "new_group=1" in lines and "group_reporting" in lines
        assert "stonewall" not in lines
    with pytest.raises(ValueError, match="stonewall"):
        items_of(_spec_with([{"name": "G", "jobs": [{**READ, "stonewall": True}]}]), "/d",
                        None)  # fmt: skip
    with pytest.raises(ValueError, match="r given twice"):
        items_of(_spec_with([{"name": "r", "jobs": [READ]}]), "/d", None)


def test_group_cells_are_each_job_and_the_total():
    (item,) = items_of(_spec_with([{"name": "G", "jobs": [READ, WRITE]}]), "/d", None)
    cells = cells_of(item, [])
    assert [c.key for c in cells] == [("r", None), ("w", None), ("G", None)]
    assert cells[0].identity["group"] == "G" and cells[0].expected == 8
    total = cells[-1].identity
    assert (total["job"], total["group_jobs"], total["numjobs"], total["iodepth"]) == ("G", 2, 3, 8)
    assert (total["rw"], total["bs"]) == ("randread+randwrite", "mixed")
    assert cells[-1].expected == 8 + 2  # 8 in flight for r, one per thread of w (iodepth 1)


def test_group_params_plan_and_budget():
    params = FioParams(groups=[[READ, {**WRITE, "runtime": 40, "ramp_time": 7}]])
    assert params.groups[0].name == "group1"
    spec = driver_spec(params, None)
    assert spec.workloads == [] and spec.groups[0].jobs[1]["runtime"] == 40
    # one item as long as its longest job and warm-up (40 + 7 s, not the probe's 30 + 5); the
    # fills of assay's files and the group's jobs (1 + 1 + 2 threads x 256 MiB)
    fills = 4 * 256 * MIB / FILL_RATE_ASSUMED
    budget = 40 + 7 + RUN_OVERHEAD_S + GRACE_S + fills
    assert spec.deadline_s == pytest.approx(budget, abs=0.1)
    probe = get_probe("fio")
    ctx = PlanContext(system=System())
    (draft,) = probe.drafts(params, ctx, mpis=[], ranks=None)
    assert draft.label == "workloads group1"
    with pytest.raises(SuiteError, match="missing bs"):  # checked when planned, not at run time
        probe.drafts(FioParams(groups=[[{"name": "x", "rw": "read"}]]), ctx, mpis=[], ranks=None)


# ---------------------------------------------------------------------------- vdbench_suite


@pytest.fixture
def seed(tmp_path: Path) -> dict[str, Path]:
    return seed_files.write_seed_files(tmp_path / "vdb", vms=2)


def test_a_seed_run_becomes_one_fio_bench_running_its_sds_together(seed, tmp_path: Path):
    target = tmp_path / "scratch"
    spec, notes = vdbench_suite(seed["vnet1-RndRead-workload"], target_dir=target, **SMALL)
    (bench,) = spec.bench
    assert (bench.probe, bench.name) == ("fio", "RndRead")
    p = bench.params
    assert p["mode"] == "workloads" and p["target"] == str(target) and p["direct"] is True
    (group,) = p["groups"]
    assert group["name"] == "RndRead" and len(group["jobs"]) == 2 * 6
    job = group["jobs"][6 + 2]  # vm2, volume 3: lun=/mnt/vdb3/file-2-3
    assert job["name"] == "RndRead.sd-2-3" and job["filename"] == str(target / "file-2-3")
    assert (job["rw"], job["bs"], job["iodepth"], job["numjobs"]) == ("randread", 8192, 25, 1)
    assert (job["runtime"], job["ramp_time"], job["size"]) == (1, 1, 4 * MIB)
    assert job["extra"] == {"new_group": "1"} and "directory" not in job
    # the hd= hosts are named, with file and line
    hosts = [n for n in notes if ": hd=vm" in n]
    assert len(hosts) == 2
    assert re.fullmatch(
        r".*vnet1-hosts-nfs:2: hd=vm1 \(system=vdbench-vnet1-1, shell=ssh, user=root\): "
        r"remote Vdbench host .*",
        hosts[0],
    )
    assert any(n.endswith("jvms=1: Vdbench JVM count per host: fio runs one process per job")
               for n in notes)  # fmt: skip
    assert any("rd=RndRead: the SDs of Vdbench host(s) vm1, vm2: all 12 jobs" in n for n in notes)
    jobs = plan(spec, PlanContext(system=System()))
    assert len(jobs) == 1 and jobs[0].argv[1:3] == ["-m", "assay.drivers.fio"]


def test_on_slurm_each_vdbench_host_is_a_bench_on_its_node(seed, tmp_path: Path):
    """The seed's two client VMs (hd=vm1, hd=vm2, six SDs each) as two benches: vm1 on node 0,
    vm2 on node 1, one node_group (the run): the Slurm launcher runs them at once."""
    target = tmp_path / "scratch"
    path = seed["vnet1-RndRead-workload"]
    spec, notes = vdbench_suite(path, target_dir=target, per_host=True, **SMALL)
    assert [b.name for b in spec.bench] == ["RndRead@vm1", "RndRead@vm2"]
    for i, bench in enumerate(spec.bench):
        p = bench.params
        assert (p["node_index"], p["node_group"], p["host_label"]) == (i, "RndRead", f"vm{i + 1}")
        (group,) = p["groups"]
        assert [j["name"] for j in group["jobs"]] == [
            f"RndRead.sd-{i + 1}-{v}" for v in range(1, 7)
        ]
    assert any("Vdbench hosts vm1, vm2: each on its own allocation node" in n for n in notes)
    jobs = plan(spec, PlanContext(system=System()))
    assert [(j.params["node_index"], j.params["vdbench_host"]) for j in jobs] == [
        (0, "vm1"),
        (1, "vm2"),
    ]
    # each on its node, both in one group: a multi-node scheduler starts them together
    assert [(j.spread.kind, j.spread.node) for j in jobs] == [("on-node", 0), ("on-node", 1)]
    assert len({j.spread.group for j in jobs}) == 1
    # both share the target from their nodes at once: each keeps its own assay directory
    from assay.probes.fio import spec_of

    assert [spec_of(j).subdir for j in jobs] == ["assay-fio-vm1", "assay-fio-vm2"]
    # the same file without per_host (a local run): one bench, every SD at once, as before
    (bench,) = vdbench_suite(path, target_dir=target, **SMALL)[0].bench
    assert "node_index" not in bench.params and len(bench.params["groups"][0]["jobs"]) == 12


@pytest.mark.parametrize("pattern", seed_files.PATTERNS)
def test_every_seed_workload_file_plans(seed, tmp_path: Path, pattern: str):
    spec, notes = vdbench_suite(seed[f"vnet1-{pattern}-workload"], target_dir=tmp_path, **SMALL)
    expected = {"SeqWrite": 3, "SeqMix": 2}.get(pattern, 1)
    assert len(spec.bench) == expected
    assert len(plan(spec, PlanContext(system=System()))) == expected
    if pattern == "FillWrite":  # seekpct=eof: to the end of each LUN; interval= is named
        job = spec.bench[0].params["groups"][0]["jobs"][0]
        assert job["time_based"] is False and job["rw"] == "write"
        assert any("interval=1: Vdbench's reporting interval" in n for n in notes)


def test_curve_stopcurve_and_fixed_rates(tmp_path: Path):
    path = tmp_path / "curve.vdb"
    path.write_text(
        "sd=sd1,lun=/mnt/a/f1,size=1g,threads=4,openflags=o_direct\n"
        "sd=sd2,lun=/mnt/b/f2,size=1g,threads=4,openflags=o_direct\n"
        "wd=w1,sd=sd*,xfersize=4k,rdpct=70,seekpct=100\n"
        "rd=rc,wd=w1,iorate=curve,curve=(20,60,100),stopcurve=5,elapsed=10,warmup=2\n"
        "rd=fixed,wd=w1,iorate=500,elapsed=10\n"
    )
    spec, _ = vdbench_suite(path, lun_map={"/mnt": str(tmp_path / "luns")})
    curve, fixed = spec.bench
    assert curve.params["mode"] == "curve" and curve.params["curve"] == [20, 60, 100]
    assert curve.params["max_latency_ms"] == 5  # stopcurve= is a response time in ms
    jobs = curve.params["groups"][0]["jobs"]
    assert [j["filename"] for j in jobs] == [str(tmp_path / "luns/a/f1"),
                                             str(tmp_path / "luns/b/f2")]  # fmt: skip
    assert all(j["rw"] == "randrw" and j["rwmixread"] == 70 for j in jobs)
    assert (curve.params["runtime"], curve.params["ramp_time"]) == (8, 2)
    assert fixed.params["mode"] == "workloads"
    # iorate=500 over two jobs of one thread each (libaio, iodepth 4): 250 each, Poisson
    assert [(j["rate_iops"], j["rate_process"]) for j in fixed.params["groups"][0]["jobs"]] == [
        (250, "poisson"),
        (250, "poisson"),
    ]


def test_lun_arguments_and_shared_base_names(tmp_path: Path):
    path = tmp_path / "two.vdb"
    path.write_text(
        "sd=sd1,lun=/mnt/a/data,size=1m\nsd=sd2,lun=/mnt/b/data,size=1m\n"
        "wd=w1,sd=sd*\nrd=r1,wd=w1,iorate=max\n"
    )
    with pytest.raises(SuiteError, match="not both"):
        vdbench_suite(path, lun_map={"/mnt": "/x"}, target_dir=tmp_path)
    _, notes = vdbench_suite(path, target_dir=tmp_path / "t")
    assert any(
        "sd=sd1,sd2: LUNs /mnt/a/data, /mnt/b/data all become" in n and "share one file" in n
        for n in notes
    )
    bad = tmp_path / "bad.vdb"
    bad.write_text("sd=sd1,lun=/x,size=1m\nwd=w1,sd=sd1,xfersize=4k,frobnicate=3\n")
    with pytest.raises(ParseError, match="frobnicate") as err:
        vdbench_suite(bad)
    assert err.value.line == 2


def test_suite_toml_reads_back_to_the_same_suite(seed, tmp_path: Path):
    spec, notes = vdbench_suite(seed["vnet1-SeqMix-workload"], target_dir=tmp_path, **SMALL)
    text = suite_toml(spec, notes)
    assert load_suite(text) == spec
    assert text.startswith("# Not translated (Vdbench -> fio):\n# ")
    assert "[[bench.params.groups.jobs]]" in text


# ---------------------------------------------------------------------------- real fio


@pytest.mark.slow
@needs_fio
def test_seed_file_runs_for_real_as_a_suite(assay_home: Path, tmp_path: Path):
    files = seed_files.write_seed_files(tmp_path / "vdb", vms=1)
    target = tmp_path / "target"
    target.mkdir()
    spec, notes = vdbench_suite(files["vnet1-RndRead-workload"], target_dir=target, **SMALL)
    suite = tmp_path / "rndread.toml"
    suite.write_text(suite_toml(spec, notes))
    proc = run_cli("run", str(suite), home=assay_home, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    iops = {
        s["params"]["workload"]: s["value"]
        for s in report["samples"]
        if s["metric"] == "storage.iops" and s["params"].get("group") == "RndRead"
    }
    members = {f"RndRead.sd-1-{v}" for v in range(1, 7)}
    assert set(iops) == members | {"RndRead"}
    assert all(iops[m] > 0 for m in members)
    assert iops["RndRead"] == pytest.approx(sum(iops[m] for m in members), rel=1e-9)
    # one fio run, every SD at once; the LUN files were created in the target and removed
    (run_dir,) = (assay_home / "runs").iterdir()
    (jobfile,) = [p for p in run_dir.glob("jobs/*/*-RndRead.fio")]
    assert jobfile.read_text().count("new_group=1") == 6
    assert list(target.iterdir()) == []

    from assay.analysis.statistics.stats import fold_repetitions
    from assay.report.storage import storage_tables
    from assay.store.rundir import RunStore

    (table,) = storage_tables(fold_repetitions(RunStore(assay_home).load(None).samples))
    assert [r[0] for r in table.rows] == ["RndRead", *sorted(members)]
    assert table.rows[0][2] == "6"  # numjobs of the total: the six SDs' threads


@pytest.mark.slow
@needs_fio
def test_a_groups_curve_caps_its_jobs_together(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    fast = {"name": "fast", "rw": "randread", "bs": 4096, "iodepth": 8}
    slow = {"name": "slow", "rw": "randread", "bs": 4096, "iodepth": 1, "ioengine": "psync"}
    spec = _spec_with([{"name": "G", "jobs": [fast, slow]}], mode="curve", curve=[50, 100],
                      size=4 * MIB)  # fmt: skip
    assert driver_main(["--spec", spec.model_dump_json()]) == EXIT_OK
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    iops = [
        o for o in out if o["metric"] == "storage.iops" and o["params"]["mode"] != "curve-summary"
    ]
    top = {o["params"]["workload"]: o["params"]["point_iops"] for o in iops
           if o["params"]["mode"] == "max"}  # fmt: skip
    assert set(top) == {"fast", "slow", "G"}
    assert top["G"] == pytest.approx(top["fast"] + top["slow"])
    half = {o["params"]["workload"]: o["params"]["target_iops"] for o in iops
            if o["params"].get("curve_pct") == 50}  # fmt: skip
    # the total at 50% of the total, each job at 50% of what it did uncontrolled
    assert half["G"] == pytest.approx(round(top["G"] * 0.5))
    assert half["fast"] == pytest.approx(half["G"] * top["fast"] / top["G"])
    assert half["fast"] + half["slow"] == pytest.approx(half["G"])
    text = next(tmp_path.glob("*-G-50.fio")).read_text()
    caps = dict(re.findall(r"^\[(\w+)\][^\[]*?^rate_iops=(\d+)", text, flags=re.M | re.S))
    assert caps == {"fast": str(round(half["fast"])), "slow": str(round(half["slow"]))}
    (summary,) = [o for o in out if o["params"]["mode"] == "curve-summary"]
    assert summary["params"]["workload"] == "G" and summary["params"]["group_jobs"] == 2


@pytest.mark.slow
def test_cli_runs_the_seeds_vdbench_file(assay_home: Path, tmp_path: Path):
    """`assay run --vdbench` on the seed script's own output, LUNs moved to local scratch."""
    import sys as _sys

    _sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures" / "vdbench"))
    from seed_files import write_seed_files

    files = tmp_path / "vdb"
    write_seed_files(files, vms=1)
    target = tmp_path / "target"
    target.mkdir()
    proc = run_cli(
        "run", "--vdbench", str(files / "vnet1-RndWrite-workload"), "--target", str(target),
        "--elapsed", "2", "--warmup", "1", "--size", "4m", home=assay_home,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "vdbench:" in proc.stderr and "hd=vm1" in proc.stderr  # untranslated hosts are named
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    rows = [s for s in doc["samples"] if s["metric"] == "storage.iops"]
    assert {s["params"]["direction"] for s in rows} == {"write"}
    assert any(s["params"].get("job") == "RndWrite" for s in rows)  # the group's total
    assert not any(target.iterdir())  # assay removed its files
    with pytest.raises(AssertionError):
        run_cli("run", "memory", "--vdbench", str(files / "vnet1-RndWrite-workload"),
                home=assay_home, check=True)  # fmt: skip
