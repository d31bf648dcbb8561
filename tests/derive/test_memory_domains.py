"""STREAM per L3 domain / NUMA node, the memory latency ladder, and their report tables.

Real runs go through the CLI with tiny sizes (this VM has one L3 domain and one NUMA node);
the planning for a 2-socket, 8-CCX node is checked on a System built by hand, and the slow
domain flag on synthetic numbers.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from assay.analysis.derived.domains import slow_domains, summarize_domains, summary_line
from assay.analysis.statistics.stats import Figure, fold_repetitions
from assay.errors import SuiteError
from assay.model import Sample, System
from assay.plan import plan
from assay.probes import PlanContext, get_probe
from assay.probes.memlat import default_max_bytes, level_of
from assay.report.memory import domain_tables, node_figures
from assay.store.rundir import RunStore
from assay.suite import load_suite
from assay.system import Context, PlanFacts, collect_plan_facts
from assay.system.cpulist import format_cpulist as cpulist
from conftest import run_cli

NATIVE = Path(__file__).resolve().parents[2] / "src" / "assay" / "native"
GB = 1e9
MiB = 2**20
GiB = 2**30


# ---------------------------------------------------------------------------------------------
# the pure summary and flag


def test_summary_line_is_the_seed_layout():
    ccx = {i: (32 + (i % 2)) * GB for i in range(8)}
    summary = summarize_domains(ccx, node=260 * GB, scope="l3")
    assert summary_line(summary, word="CCX") == "Triad 260 GB/s (32–33 GB/s per CCX)"
    assert (summary.low, summary.high, summary.count) == (32 * GB, 33 * GB, 8)
    numa = summarize_domains({0: 130.4 * GB, 1: 129.6 * GB}, node=260 * GB, scope="numa")
    assert summary_line(numa) == "Triad 260 GB/s (130 GB/s per NUMA node)"
    alone = summarize_domains({0: 32.5 * GB})
    assert summary_line(alone) == "Triad 32.5 GB/s per L3 domain (1 × L3 domain)"


def test_a_slow_domain_is_flagged_and_a_5_percent_one_is_not():
    values = {i: 33 * GB for i in range(8)}
    values[5] = 28 * GB  # 15.2% below its peers
    values[2] = 33 * 0.95 * GB  # 5% below: within the noise of a healthy node
    flagged = slow_domains(values)
    assert [s.domain for s in flagged] == [5]
    assert flagged[0].shortfall == pytest.approx(1 - 28 / 33)
    assert flagged[0].peers_median == 33 * GB
    assert "15.2% below" in flagged[0].describe()
    assert slow_domains({0: 33 * GB, 1: 0.95 * 33 * GB}) == []


def test_two_domains_compare_with_the_peer_not_with_a_median_that_includes_themselves():
    # The median of both (92.5) would put B only 8% low; against its peer it is 15% low.
    assert [s.domain for s in slow_domains({"A": 100.0, "B": 85.0})] == ["B"]
    assert slow_domains({"A": 100.0}) == []  # no peers, no verdict
    assert slow_domains({"A": 100.0, "B": 91.0}) == []


def _fig(metric: str, value: float, **params: object) -> Figure:
    return Figure(Sample.make("stream", metric, value, params), 1, None)


def test_the_domain_table_flags_the_slow_ccx_and_prints_the_summary():
    figures = [_fig("memory.triad", 250 * GB, scope="node", threads=64)]
    for ccx in range(8):
        triad = (27.0 if ccx == 6 else 32.0 + 0.1 * ccx) * GB
        for kernel, value in (("copy", 40 * GB), ("triad", triad)):
            figures.append(
                _fig(f"memory.{kernel}", value, scope="l3", domain=ccx, cpus=cpulist(
                    list(range(8 * ccx, 8 * ccx + 8))), threads=8, membind=str(ccx // 4))
            )  # fmt: skip
    tables = domain_tables(figures, System(vendor="AMD"))
    assert [t.key for t in tables] == ["stream-domains"]
    table = tables[0]
    assert len(table.rows) == 8
    flag = table.columns.index("Flag")
    flagged = [row[1] for row in table.rows if row[flag]]
    assert flagged == ["6"]
    assert table.rows[6][table.columns.index("CPUs")] == "48-55"
    assert table.rows[6][table.columns.index("Scale GB/s")] == "–"  # not measured
    assert "Triad 250 GB/s (27–32.7 GB/s per CCX)" in table.notes
    # stream_table must not mistake a domain's figure for the node's.
    assert [f.sample.params["scope"] for f in node_figures(figures)] == ["node"]


def _lat(ws: int, ns: float, level: str, **params: object) -> Figure:
    p = {"working_set_bytes": ws, "level": level, "cpu": 0, "huge_pages": False, **params}
    return Figure(Sample.make("memlat", "memory.latency", ns * 1e-9, p), 1, None)


def test_the_latency_ladder_orders_sets_and_shows_the_median_repetition():
    figures = [
        _lat(8 * MiB, 90.0, "DRAM"),
        _lat(4096, 1.0, "L1", loads=100),  # three repetitions that did not fold (loads differ)
        _lat(4096, 5.0, "L1", loads=101),
        _lat(4096, 1.5, "L1", loads=102),
        _lat(256 * 1024, 4.5, "L2"),
    ]
    (table,) = domain_tables(figures)
    assert table.key == "memory-latency"
    assert [r[:3] for r in table.rows] == [
        ["4 KiB", "L1", "1.50"],
        ["256 KiB", "L2", "4.50"],
        ["8 MiB", "DRAM", "90.00"],
    ]
    assert (
        table.notes[0]
        == "cpu 0: L1 1.5 ns, L2 4.5 ns, DRAM 90.0 ns; largest working set (8 MiB) 90.0 ns"
    )


# ---------------------------------------------------------------------------------------------
# planning for a node this VM is not: 2 sockets, 4 CCX of 8 cores each, SMT


def _epyc_like() -> System:
    cores = list(range(64))
    ccx = [cores[8 * i : 8 * i + 8] + [c + 64 for c in cores[8 * i : 8 * i + 8]] for i in range(8)]
    nodes = [
        {"id": s, "cpus": sorted(c for d in ccx[4 * s : 4 * s + 4] for c in d), "memory_bytes": m}
        for s, m in ((0, 256 * GiB), (1, 256 * GiB))
    ]
    nodes.append({"id": 2, "cpus": [], "memory_bytes": 64 * GiB})  # memory-only (CXL)
    return System(
        sockets=2,
        cores=64,
        threads=128,
        l3_bytes=8 * 32 * MiB,
        l3_domains=ccx,
        numa_nodes=nodes,
        memory_bytes=576 * GiB,
    )


# The fake node's SMT pairs (c, c + 64), and numactl on PATH: facts, not this VM's /sys.
SMT = PlanFacts(core_of={c: c % 64 for c in range(128)}, programs={"numactl": "/usr/bin/numactl"})


def _plan(params: str, system: System, facts: PlanFacts = SMT) -> list:
    spec = load_suite(f'name = "m"\n[[bench]]\nprobe = "stream"\nparams = {{ {params} }}\n')
    return plan(spec, PlanContext(system=system, facts=facts))


def test_all_scope_plans_the_node_every_ccx_and_every_numa_node():
    jobs = _plan('scope = "all", ntimes = 5', _epyc_like())
    scopes = [j.params["scope"] for j in jobs]
    assert scopes == ["node"] + ["l3"] * 8 + ["numa"] * 2  # the memory-only node is skipped
    node, ccx, numa = jobs[0], jobs[1:9], jobs[9:]
    assert node.argv[0] == "{exe}" and node.env["OMP_NUM_THREADS"] == "64"

    for i, job in enumerate(ccx):
        cpus = list(range(8 * i, 8 * i + 8))  # one thread per core: no SMT sibling
        assert job.params["domain"] == i and job.params["cpus"] == cpulist(cpus)
        assert job.argv[:4] == [
            "numactl",
            f"--membind={i // 4}",
            f"--physcpubind={8 * i}-{8 * i + 7}",
            "{exe}",
        ]
        assert job.env["OMP_NUM_THREADS"] == "8"
        assert job.env["OMP_PLACES"] == ",".join(f"{{{c}}}" for c in cpus)
        # STREAM's rule on the caches this instance can use: 4 x its 32 MiB L3.
        assert job.argv[job.argv.index("--elements") + 1] == str(4 * 32 * MiB // 8)
        assert job.argv[job.argv.index("--ntimes") + 1] == "5"
        assert job.job_id.endswith(f"stream-l3-{i}")

    for s, job in enumerate(numa):
        assert job.params["domain"] == s and job.params["cpus"] == f"{32 * s}-{32 * s + 31}"
        assert job.argv[1:3] == [f"--membind={s}", f"--physcpubind={32 * s}-{32 * s + 31}"]
        assert job.env["OMP_NUM_THREADS"] == "32"
        assert job.argv[job.argv.index("--elements") + 1] == str(4 * 4 * 32 * MiB // 8)


def test_domain_arrays_keep_to_half_the_domains_memory():
    system = _epyc_like()
    for node in system.numa_nodes or []:
        node["memory_bytes"] = 1 * GiB
    jobs = _plan('scope = "numa"', system)
    elements = int(jobs[0].argv[jobs[0].argv.index("--elements") + 1])
    assert elements == 1 * GiB // 2 // 24
    # and never below STREAM's own default when the caches are small
    small = System(l3_bytes=4 * MiB, l3_domains=[[0, 1]], numa_nodes=[{"id": 0, "cpus": [0, 1]}])
    job = _plan('scope = "l3"', small)[0]
    assert job.argv[job.argv.index("--elements") + 1] == str(10_000_000)


def test_scope_node_is_the_unchanged_default():
    jobs = _plan("", _epyc_like())
    assert len(jobs) == 1 and jobs[0].argv[0] == "{exe}" and jobs[0].params["scope"] == "node"


def test_without_sibling_facts_every_cpu_counts_as_a_core():
    jobs = _plan('scope = "l3"', _epyc_like(), PlanFacts(programs=SMT.programs))
    assert jobs[0].env["OMP_NUM_THREADS"] == "16"  # both hardware threads of 8 cores


def test_domain_scopes_explain_what_is_missing():
    with pytest.raises(SuiteError, match="L3 domains are unknown"):
        _plan('scope = "l3"', System(cores=2))
    with pytest.raises(SuiteError, match="NUMA nodes"):
        _plan('scope = "numa"', System(cores=2, l3_domains=[[0, 1]]))
    assert len(_plan('scope = "all"', System(cores=2))) == 1  # all: what is known

    with pytest.raises(SuiteError) as err:
        _plan('scope = "l3"', _epyc_like(), PlanFacts(core_of=SMT.core_of))  # no numactl
    assert "numactl" in str(err.value) and "apt-get install numactl" in str(err.value)


# ---------------------------------------------------------------------------------------------
# memlat: planning helpers and the C program's contract


def test_plan_facts_from_a_fake_sysfs_tolerate_missing_files(tmp_path: Path):
    cpu_dir = tmp_path / "sys" / "devices" / "system" / "cpu"
    cache = cpu_dir / "cpu0" / "cache"
    for name, level, kind, size in (
        ("index0", "1", "Data", "48K"),
        ("index1", "1", "Instruction", "32K"),
        ("index2", "2", "Unified", "2048K"),
        ("index3", "3", "Unified", "32768K"),
    ):
        (cache / name).mkdir(parents=True)
        for field, value in (("level", level), ("type", kind), ("size", size)):
            (cache / name / field).write_text(value + "\n")
    (cache / "index4").mkdir()  # no files at all
    (cpu_dir / "cpu1").mkdir()  # a CPU sysfs says nothing about
    for cpu, siblings in ((0, "0,2"), (2, "0,2")):
        (cpu_dir / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (cpu_dir / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(siblings)
    asked: list[str] = []

    def which(name: str) -> str | None:
        asked.append(name)
        return {"taskset": "/opt/taskset", "/opt/hpl/xhpl": "/opt/hpl/xhpl"}.get(name)

    ctx = Context(root=tmp_path, which=which)
    facts = collect_plan_facts(ctx)
    # a path a suite names is looked up through the same Context when asked; a program of
    # PLAN_PROGRAMS is answered from what was collected, not looked up again
    asked.clear()
    assert facts.which("/opt/hpl/xhpl") == "/opt/hpl/xhpl" and facts.which("/no/ior") is None
    assert facts.which("taskset") == "/opt/taskset" and facts.which("hpcc") is None
    assert asked == ["/opt/hpl/xhpl", "/no/ior"]
    assert PlanFacts().which("/opt/hpl/xhpl") is None  # facts built by hand find nothing else
    sizes = facts.caches[0]
    assert sizes == {"L1": 48 * 1024, "L2": 2 * MiB, "L3": 32 * MiB}
    assert set(facts.caches) == {0}
    assert facts.core_of == {0: 0, 2: 0}
    assert facts.programs == {"taskset": "/opt/taskset"} and facts.which("numactl") is None
    assert [level_of(n, sizes) for n in (4096, 48 * 1024, 64 * 1024, 32 * MiB, 64 * MiB)] == [
        "L1",
        "L1",
        "L2",
        "L3",
        "DRAM",
    ]
    assert level_of(4096, {}) == "?"


def test_memlat_default_reaches_4x_the_l3_within_a_quarter_of_memory():
    assert default_max_bytes(System(l3_bytes=256 * MiB, memory_bytes=512 * GiB)) == GiB
    assert default_max_bytes(System(l3_bytes=256 * MiB, memory_bytes=2 * GiB)) == GiB // 2
    memlat = get_probe("memlat")
    ctx = PlanContext(System(l3_bytes=8 * MiB), facts=SMT)
    job = memlat.drafts(memlat.Params(cpu=1), ctx, mpis=[], ranks=None)[0]
    assert job.argv[job.argv.index("--max-bytes") + 1] == str(32 * MiB)
    assert job.argv[:3] == ["numactl", "--physcpubind=1", "--localalloc"]
    assert job.params["cache_bytes"] == {"L3": 8 * MiB}  # the record's L3 stands in for /sys
    taskset = PlanContext(System(), facts=PlanFacts(programs={"taskset": "/usr/bin/taskset"}))
    job = memlat.drafts(memlat.Params(cpu=1), taskset, mpis=[], ranks=None)[0]
    assert job.argv[:3] == ["taskset", "-c", "1"] and job.params["pinned_by"] == "taskset"
    with pytest.raises(SuiteError, match="neither numactl nor taskset"):
        memlat.drafts(memlat.Params(), PlanContext(System()), mpis=[], ranks=None)
    with pytest.raises(SuiteError, match="not one of this system's CPUs"):
        _memlat_plan("cpu = 4", System(numa_nodes=[{"id": 0, "cpus": [0, 1]}]))


def _memlat_plan(params: str, system: System) -> list:
    spec = load_suite(f'name = "m"\n[[bench]]\nprobe = "memlat"\nparams = {{ {params} }}\n')
    return plan(spec, PlanContext(system=system, facts=SMT))


@pytest.fixture(scope="module")
def memlat_exe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("memlat") / "memlat"
    cmd = ["gcc", "-O2", "-Wall", "-Wextra", str(NATIVE / "memlat.c"), "-o", str(out), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr  # -Wall -Wextra clean
    return out


def _memlat(exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = ["taskset", "-c", "0", str(exe), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_memlat_sizes_stats_and_json_lines(memlat_exe: Path):
    proc = _memlat(memlat_exe, "--max-bytes", "100000", "--min-time", "0.005", "--repeats", "3")
    assert proc.returncode == 0, proc.stderr
    points = [json.loads(line) for line in proc.stdout.splitlines()]
    sizes = [p["params"]["working_set_bytes"] for p in points]
    # 2 steps per doubling, each a whole number of 64-byte lines; the maximum (off the grid,
    # rounded down to a line) always ends the ladder
    assert sizes == [4096, 5760, 8192, 11584, 16384, 23168, 32768, 46336, 65536, 92672, 99968]
    for p in points:
        assert p["metric"] == "memory.latency" and 1e-10 < p["value"] < 1e-6
        assert p["params"]["stride"] == 64 and p["params"]["huge_pages"] is False
        assert p["stats"]["n"] == 3 and p["stats"]["min"] <= p["value"] <= p["stats"]["max"]
        # calibrated: a pass lasts about --min-time (loose: other jobs share these 2 cores)
        assert p["params"]["loads"] * p["stats"]["median"] >= 0.005 * 0.25


@pytest.mark.parametrize(
    "args",
    [
        ["--bogus"],
        ["--min-bytes"],
        ["--min-bytes", "10k"],
        ["--stride", "12"],
        ["--min-bytes", "8192", "--max-bytes", "4096"],
        ["--min-time", "0"],
        ["--repeats", "0"],
    ],
)
def test_memlat_rejects_bad_arguments(memlat_exe: Path, args: list[str]):
    proc = _memlat(memlat_exe, *args)
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.startswith("memlat:")


def test_memlat_sizes_take_binary_suffixes(memlat_exe: Path):
    proc = _memlat(memlat_exe, "--min-bytes", "32K", "--max-bytes", "64K", "--min-time", "0.001")
    assert proc.returncode == 0, proc.stderr
    sizes = [json.loads(line)["params"]["working_set_bytes"] for line in proc.stdout.splitlines()]
    assert sizes == [32768, 46336, 65536]


def test_memlat_help(memlat_exe: Path):
    proc = _memlat(memlat_exe, "--help")
    assert proc.returncode == 0 and "--steps-per-doubling" in proc.stdout


# ---------------------------------------------------------------------------------------------
# real runs through the CLI


@pytest.mark.slow
def test_stream_per_domain_and_latency_ladder_end_to_end(assay_home: Path, tmp_path: Path):
    suite = tmp_path / "memory.toml"
    suite.write_text(
        'name = "memory-test"\n'
        '[[bench]]\nprobe = "stream"\n'
        'params = { elements = 200000, ntimes = 4, scope = "all" }\n'
        '[[bench]]\nprobe = "memlat"\n'
        "params = { max_bytes = 8388608, min_time = 0.02, repeats = 3 }\n"
    )
    proc = run_cli("run", str(suite), home=assay_home)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    system = System.from_dict(doc["system"])

    stream = [s for s in doc["samples"] if s["probe"] == "stream"]
    scopes = {(s["params"]["scope"], s["params"].get("domain")) for s in stream}
    n_l3, n_numa = len(system.l3_domains or []), len(system.numa_nodes or [])
    assert scopes == {("node", None)} | {("l3", i) for i in range(n_l3)} | {
        ("numa", n["id"]) for n in system.numa_nodes or []
    }
    assert len(stream) == 4 * (1 + n_l3 + n_numa)
    for s in stream:
        if s["params"]["scope"] == "l3":
            assert s["params"]["cpus"] == cpulist(system.l3_domains[s["params"]["domain"]])
            assert s["params"]["threads"] == len(system.l3_domains[s["params"]["domain"]])
        assert s["value"] > 1e8  # B/s

    lat = sorted(
        (s for s in doc["samples"] if s["metric"] == "memory.latency"),
        key=lambda s: s["params"]["working_set_bytes"],
    )
    assert lat[0]["params"]["working_set_bytes"] == 4096
    assert lat[-1]["params"]["working_set_bytes"] == 8 * MiB
    assert lat[0]["params"]["level"] == "L1"
    assert lat[0]["value"] < lat[-1]["value"]  # an L1 hit is faster than an 8 MiB chase
    assert all(s["unit"] == "s" and s["params"]["huge_pages"] is False for s in lat)

    # The report tables, from the stored run.
    run = RunStore(assay_home).load()
    tables = {
        t.key: t for t in domain_tables(fold_repetitions(run.samples), run.system, run.results)
    }
    assert len(tables["stream-domains"].rows) == n_l3 + n_numa
    assert tables["stream-domains"].notes[0].startswith("Triad ")
    assert tables["stream-domains"].commands[0].startswith("numactl --membind=")
    ladder = tables["memory-latency"]
    assert [r[0] for r in ladder.rows][:2] == ["4 KiB", "5.62 KiB"]
    assert ladder.rows[0][1] == "L1"
