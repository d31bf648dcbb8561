"""Report tables built from stored samples: each defect of issue 13 (report side) and issue 14
(rendering, compare), on runs assembled from samples shaped as the real probes store them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assay.analysis.compare.verdict import compare_runs, measured
from assay.model import JobResult, RunInfo, Sample, Stats, System
from assay.report.build import build_tables
from assay.report.render import render
from assay.store import RunStore
from assay.store.rundir import LoadedRun
from conftest import run_cli

GB = 1e9


def loaded(samples: list[Sample], results: list[JobResult] | None = None, **info) -> LoadedRun:
    run_info = RunInfo(run_id="20260101-000000-abcd", created="2026-01-01T00:00:00Z", suite="t")
    for k, v in info.items():
        setattr(run_info, k, v)
    return LoadedRun(
        run_info, Path("/nonexistent/run"), System(vendor="AMD", hostname="h1"), samples,
        results or [],
    )  # fmt: skip


def tables_of(run: LoadedRun) -> dict:
    return {t.key: t for t in build_tables(run)}


def stream(kernel: str, value: float, job: str = "001-stream", **params) -> Sample:
    s = Sample.make("stream", f"memory.{kernel}", value, params)
    s.job_id = job
    return s


# --- issue 13: STREAM --------------------------------------------------------------------------


def test_the_domain_summary_quotes_the_node_figure():
    # a real memory run: one node-wide STREAM, then one instance per CCX
    samples = [stream("triad", 250 * GB, scope="node", threads=16)]
    for ccx, value in enumerate((32.1, 33.0)):
        samples.append(stream("triad", value * GB, "002-stream", scope="l3", domain=ccx,
                              cpus=f"{8 * ccx}-{8 * ccx + 7}", threads=8, membind="0"))  # fmt: skip
    tables = tables_of(loaded(samples))
    assert tables["stream-domains"].notes[0] == "Triad 250 GB/s (32.1–33 GB/s per CCX)"
    assert len(tables["stream"].rows) == 1  # the node figure stays in STREAM's own table


def test_repeated_stream_rows_take_every_column_from_one_repetition():
    elements = 1_000_000
    moved = 3 * 8 * elements  # Triad moves three arrays of doubles
    samples = []
    for rep, rate in enumerate((10 * GB, 12 * GB, 11 * GB)):  # the first is not the median
        t = moved / rate
        samples.append(
            stream("triad", rate, f"00{rep}-stream", scope="node", threads=2, elements=elements,
                   ntimes=10, repetition=rep, min_time=t, avg_time=1.1 * t, max_time=1.2 * t)
        )  # fmt: skip
    table = tables_of(loaded(samples))["stream"]
    (row,) = table.rows
    rate_mbs, min_time = float(row[2]), float(row[4])
    assert rate_mbs == pytest.approx(11_000.0)
    # STREAM's rate is bytes / minimum time: both columns from the same repetition
    assert moved / min_time / 1e6 == pytest.approx(rate_mbs, rel=1e-4)
    assert any("3 repetitions" in n and "median" in n for n in table.notes)


# --- issue 13: MPI -----------------------------------------------------------------------------


def p2p(probe: str, metric: str, size: int, value: float, job: str, **params) -> Sample:
    s = Sample.make(probe, metric, value, {"size": size, **params})
    s.job_id = job
    return s


def test_imb_pingpong_gets_its_own_table_without_the_window_note():
    samples = [
        p2p("osu", "p2p.bandwidth", n, n * 1e3, "i-osu", tool="osu", benchmark="osu_bw",
            mpi_label="osu") for n in (1024, 4096)
    ] + [
        p2p("imb", "p2p.bandwidth", n, n * 5e2, "i-imb", tool="imb", benchmark="PingPong",
            mpi_label="imb") for n in (1024, 4096)
    ]  # fmt: skip
    tables = tables_of(loaded(samples))
    osu, imb = tables["p2p-bandwidth"], tables["p2p-pingpong-bandwidth"]
    assert osu.columns[1:] == ["Bandwidth (MB/s) (osu)", "Bandwidth (Gb/s) (osu)"]
    assert any("window" in n for n in osu.notes)
    assert all("imb" not in c for c in osu.columns)
    assert [r[0] for r in imb.rows] == ["1024", "4096"] and "(imb)" in imb.columns[1]
    assert not any("a window of" in n for n in imb.notes)  # osu_bw's note, false here
    assert "PingPong" in imb.title


def test_each_collective_table_shows_its_own_commands_one_per_mpi():
    samples, results = [], []
    for i, (mpi, op) in enumerate(
        [(m, o) for m in ("openmpi", "mpich") for o in ("allreduce", "alltoall")]
    ):
        job = f"00{i}-coll-{mpi}-{op}"
        launcher = f"/usr/bin/mpirun.{mpi}"
        results.append(JobResult(job, "ok", 0, 1.0, [launcher, "-n", "2", "coll", "--op", op]))
        for size in (8, 64):
            stats = Stats(n=2, min=1e-6, max=2e-6)
            s = Sample.make("coll", f"coll.{op}", 1.5e-6, {"size": size, "mpi": mpi, "ranks": 2},
                            stats)  # fmt: skip
            s.job_id = job
            samples.append(s)
    tables = tables_of(loaded(samples, results))
    for op in ("allreduce", "alltoall"):
        commands = tables[f"coll-{op}"].commands
        assert len(commands) == 2, commands  # both MPIs
        assert all(c.endswith(f"--op {op}") for c in commands), commands
        assert {c.split()[0] for c in commands} == {
            "/usr/bin/mpirun.openmpi",
            "/usr/bin/mpirun.mpich",
        }


# --- issue 13: compute -------------------------------------------------------------------------


def dgemm(value: float, rpeak: float, **extra) -> Sample:
    how = "2 cores × 2.45 GHz (current) × 16 DP FLOP/cycle"
    params = {"n": 2048, "precision": "d", "threads": 2, "rpeak": rpeak,
              "rpeak_per_core": rpeak / 2, "rpeak_cores": 2, "rpeak_clock": "current",
              "rpeak_derivation": how, **extra}  # fmt: skip
    return Sample.make("dgemm", "compute.dgemm", value, params)


def test_one_rpeak_row_per_precision_whatever_the_probe_wrote():
    hpl = Sample.make("hpl", "compute.hpl", 50 * GB, {"N": 1000, "NB": 192, "P": 1, "Q": 2,
                      "rpeak": 78.4 * GB, "efficiency": 50 / 78.4})  # fmt: skip
    hpl_rpeak = Sample.make("hpl", "compute.rpeak", 78.4 * GB, {"precision": "dp"})
    # as DGEMM runs stored before the derive step have it: its own Rpeak sample, "d"
    old_rpeak = Sample.make("dgemm", "compute.rpeak", 78.4 * GB, {"precision": "d"})
    run = loaded([dgemm(60 * GB, 78.4 * GB), old_rpeak, hpl, hpl_rpeak])
    table = tables_of(run)["compute"]
    labels = [r[0] for r in table.rows]
    assert labels.count("Rpeak (DP)") == 1 and not [x for x in labels if x == "Rpeak (D)"]
    assert labels == ["Rpeak (DP)", "DGEMM", "HPL Rmax"]  # no MPI recorded: none named
    assert table.rows[2][2] == "efficiency 63.8%"  # Rmax / Rpeak


def test_a_share_above_rpeak_is_flagged_with_the_clock_source():
    table = tables_of(loaded([dgemm(80.4 * GB, 78.4 * GB)]))["compute"]
    row = next(r for r in table.rows if r[0] == "DGEMM")
    assert row[2] == "102.6% (Rpeak too low)"
    (note,) = [n for n in table.notes if "Rpeak too low" in n]
    assert "Rpeak too low: clock source current" in note and "2.45 GHz (current)" in note
    # below 100 % nothing is flagged
    table = tables_of(loaded([dgemm(70 * GB, 78.4 * GB)]))["compute"]
    assert not [n for n in table.notes if "too low" in n]


# --- issue 14: rendering -----------------------------------------------------------------------


def test_markdown_escapes_pipes_newlines_and_tags_from_data():
    s = Sample.make("x", "custom.thing", 1.0, {"note": "a|b\nc <script>"})
    run = loaded([s], label="lab|el <b>")
    run.system.hostname = "node|1"
    md = render(run, "md")
    # Markdown escapes, not HTML entities: the tag is shown as text, never live
    assert not re.search(r"(?<!\\)<(script|b)>", md)
    assert "a\\|b c \\<script>" in md
    assert "lab\\|el \\<b>" in md
    for line in md.splitlines():
        if line.startswith("| "):  # every row still has the table's cell count
            assert not re.search(r"(?<!\\)\|[^|]*\n", line)


def test_the_label_is_in_every_report():
    run = loaded([stream("triad", 10 * GB, scope="node", threads=2)], label="before BIOS update")
    assert "before BIOS update" in render(run, "term")
    assert "before BIOS update" in render(run, "md")


def test_the_terminal_report_is_sized_to_the_terminal(monkeypatch: pytest.MonkeyPatch):
    long = "x" * 200
    run = loaded([Sample.make("x", "custom.thing", 1.0, {"note": long})])
    monkeypatch.setenv("COLUMNS", "300")
    assert long in render(run, "term")  # nothing cut at 120 columns
    monkeypatch.setenv("COLUMNS", "100")
    assert max(len(line) for line in render(run, "term").splitlines()) <= 100


def _store_run(store: RunStore, samples: list[Sample], label: str = "") -> str:
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[], label=label)
    w.record(JobResult(job_id="001-x", status="ok", exit_code=0, wall_time=1, argv=[]), samples)
    w.finish("complete")
    return w.info.run_id


def test_cli_report_is_printed_once_and_o_does_not_echo(assay_home: Path, tmp_path: Path):
    store = RunStore(assay_home)
    _store_run(store, [stream("triad", 10 * GB, scope="node", threads=2)])
    out = run_cli("report", home=assay_home, check=True).stdout
    assert out.count("Memory bandwidth (STREAM)") == 1
    target = tmp_path / "r.txt"
    proc = run_cli("report", "-o", str(target), home=assay_home, check=True)
    assert "Memory bandwidth (STREAM)" not in proc.stdout
    assert target.read_text().count("Memory bandwidth (STREAM)") == 1


def test_report_to_a_path_that_cannot_be_written_is_a_message(assay_home: Path):
    _store_run(RunStore(assay_home), [stream("triad", 10 * GB, scope="node", threads=2)])
    proc = run_cli("report", "-o", "/nonexistent/dir/x.md", "-f", "md", home=assay_home)
    assert proc.returncode == 2
    assert "cannot write the report to /nonexistent/dir/x.md" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_rich_markup_in_a_label_is_data(assay_home: Path):
    store = RunStore(assay_home)
    _store_run(store, [stream("triad", 10 * GB, scope="node", threads=2)], label="[/]")
    _store_run(store, [stream("triad", 11 * GB, scope="node", threads=2)], label="[bold red]x")
    runs = run_cli("runs", home=assay_home)
    assert runs.returncode == 0, runs.stderr
    assert "[/]" in runs.stdout and "[bold red]x" in runs.stdout
    hist = run_cli("history", "memory.triad", home=assay_home)
    assert hist.returncode == 0, hist.stderr


# --- issue 14: compare -------------------------------------------------------------------------


def latencies(scale: float) -> list[Sample]:
    return [Sample.make("p2p", "p2p.latency", scale * n * 1e-9 + 1e-6, {"size": n})
            for n in (128, 2, 16, 1024)]  # fmt: skip


def test_compare_sorts_sizes_as_numbers(assay_home: Path):
    rows = compare_runs(measured(latencies(1.0)), measured(latencies(1.1))).rows
    latency = [dict(r.params)["size"] for r in rows if r.metric == "p2p.latency"]
    assert latency == ["2", "16", "128", "1024"]
    # and through the CLI, as shown (sizes in bytes, in numeric order)
    store = RunStore(assay_home)
    base = _store_run(store, latencies(1.0))
    _store_run(store, latencies(1.1))
    md = run_cli("compare", base, "-f", "md", home=assay_home, check=True).stdout
    shown = re.findall(r"^\| p2p\.latency \| size=([^|]*) \|", md, re.M)
    assert shown == ["2 B", "16 B", "128 B", "1 KiB"], md


def ior(operation: str, value: float) -> Sample:
    stats = Stats(n=5, mean=value, stddev=value * 0.01)
    return Sample.make("ior", "storage.bandwidth", value, {"operation": operation,
                       "api": "POSIX", "transfer_size": 1 << 20}, stats)  # fmt: skip


def test_compare_keeps_ior_read_and_write_apart(assay_home: Path):
    store = RunStore(assay_home)
    base = _store_run(store, [ior("write", 1000e6), ior("read", 2000e6)])
    _store_run(store, [ior("write", 570e6), ior("read", 2000e6)])  # writes 43 % slower
    proc = run_cli("compare", base, "--fail-below", "0.95", "-f", "md", home=assay_home)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    write = next(ln for ln in proc.stdout.splitlines() if "operation=write" in ln)
    assert "| 0.570 | worse ✗ |" in write
    read = next(ln for ln in proc.stdout.splitlines() if "operation=read" in ln)
    assert "| 1.000 | same |" in read


def test_compare_never_pairs_figures_it_cannot_tell_apart():
    a = [Sample.make("hpl", "memory.randomaccess", v, {"variant": "star", "generator": g})
         for v, g in ((1e7, "poly"), (2e7, "lcg"))]  # fmt: skip
    rows = compare_runs(measured(a), measured(a)).rows
    assert sorted(dict(r.params)["generator"] for r in rows) == ["lcg", "poly"]


def test_compare_names_figures_it_cannot_pair_instead_of_guessing():
    # two figures that differ only in a param that is no identity: which pair is meant?
    a = [Sample.make("stream", "memory.triad", v, {"threads": 2, "compiler": c})
         for v, c in ((10 * GB, "gcc"), (12 * GB, "icx"))]  # fmt: skip
    comp = compare_runs(measured(a), measured(a))
    assert comp.rows == []
    assert comp.ambiguous == ["memory.triad {'threads': '2'}"]


@pytest.mark.parametrize("fmt", ["md", "json", "csv", "html", "term"])
def test_an_osu_bandwidth_row_of_zero_does_not_take_the_report_down(tmp_path: Path, fmt: str):
    """``0.00`` MB/s (a rate below OSU's resolution) made the Hockney fit raise ValueError, and
    every report format of the run died with a traceback; the size is left out, and said."""
    fixture = Path(__file__).parents[1] / "fixtures" / "osu" / "alaska_ompi4_ucx_osu_bw.out"
    text = fixture.read_text().replace("\n4                      30.17\n", "\n4 0.00\n")
    assert "\n4 0.00\n" in text
    (tmp_path / "osu_bw.out").write_text(text)
    run_cli("import", "--format", "osu", str(tmp_path / "osu_bw.out"), home=tmp_path / "h",
            check=True)  # fmt: skip
    proc = run_cli("report", "-f", fmt, home=tmp_path / "h")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    if fmt == "md":
        assert "1 sizes with a bandwidth of 0 left out (size 4 B)" in proc.stdout
