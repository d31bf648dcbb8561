from __future__ import annotations

from pathlib import Path

from assay.analysis.compare.verdict import Measured, compare_runs, failing
from assay.model import JobResult, Sample, Stats, System
from assay.store import RunStore
from conftest import run_cli


def fig(metric: str, value: float, sd: float, n: int = 100, **params) -> Measured:
    """A figure of one repetition with the tool's own statistics over n iterations."""
    s = Sample.make("p2p", metric, value, params, Stats(n=n, mean=value, stddev=sd))
    return Measured("p2p", metric, params, value, (value,), s.stats, s.unit, s.better)


def test_goodness_is_direction_aware_and_significance_honest():
    old = [
        fig("p2p.latency", 2.0e-6, 0.01e-6, size=8),
        fig("p2p.bandwidth", 10e9, 0.05e9, size=4096),
        fig("p2p.latency", 3.0e-6, 1e-6, size=16),
    ]
    new = [
        fig("p2p.latency", 1.0e-6, 0.01e-6, size=8),  # half the latency: better
        fig("p2p.bandwidth", 8e9, 0.05e9, size=4096),  # less bandwidth: worse
        fig("p2p.latency", 3.05e-6, 1e-6, size=16),  # within the noise
        fig("p2p.latency", 9e-6, 1e-6, size=32),  # only in the new run
    ]
    comp = compare_runs(old, new)
    by = {(r.metric, dict(r.params)["size"]): r for r in comp.rows}
    assert by[("p2p.latency", "8")].ratio == 2.0
    assert (by[("p2p.latency", "8")].verdict, by[("p2p.latency", "8")].significance) == (
        "better",
        "significant",
    )
    assert by[("p2p.bandwidth", "4096")].ratio == 0.8
    assert by[("p2p.bandwidth", "4096")].verdict == "worse"
    assert by[("p2p.latency", "16")].significance == "not significant"
    assert by[("p2p.latency", "16")].test.method == "Welch t"
    assert comp.unmatched == [("p2p.latency", 1)] and comp.missing == []
    # a figure the noise explains never fails a CI check, a significant drop does
    assert failing(comp.rows, fail_below=0.95) == [by[("p2p.bandwidth", "4096")]]


def test_no_statistics_is_unknown_not_a_guess():
    a = Measured("x", "memory.triad", {}, 10e9, (10e9,), None, "B/s", "higher")
    b = Measured("x", "memory.triad", {}, 5e9, (5e9,), None, "B/s", "higher")
    (row,) = compare_runs([a], [b]).rows
    assert row.ratio == 0.5 and row.verdict == "worse" and row.significance == "unknown"


def test_a_rate_of_zero_is_as_bad_as_it_gets():
    a = Measured("x", "memory.triad", {}, 10e9, (10e9,), None, "B/s", "higher")
    b = Measured("x", "memory.triad", {}, 0.0, (0.0,), None, "B/s", "higher")
    (row,) = compare_runs([a], [b]).rows
    assert row.ratio == 0.0 and failing([row], fail_below=0.95) == [row]


def _store_run(store: RunStore, triad: float, cv: float = 0.01, more: tuple = ()) -> str:
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    s = Sample.make("stream", "memory.triad", triad, {"threads": 2},
                    Stats(n=9, mean=triad, stddev=triad * cv))  # fmt: skip
    w.record(JobResult(job_id="001", status="ok", exit_code=0, wall_time=1, argv=[]), [s, *more])
    w.finish("complete")
    return w.info.run_id


def test_cli_a_difference_the_noise_explains_is_not_significant_and_never_fails(
    assay_home: Path,
):
    store = RunStore(assay_home)
    base = _store_run(store, 20e9, cv=0.05)
    _store_run(store, 19.8e9, cv=0.05)  # 1% less, with 5% noise over 9 iterations a side
    proc = run_cli("compare", base, "--fail-below", "0.999", "-f", "md", home=assay_home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "| 0.990 | same | not significant (p=" in proc.stdout


def test_cli_compares_the_derived_figures_the_report_shows(assay_home: Path):
    def curve(alpha: float) -> tuple:
        return tuple(Sample.make("osu", "p2p.latency", alpha + n / 12e9, {"size": n, "mpi": "ompi"})
                     for n in [0] + [2**k for k in range(16)])  # fmt: skip

    store = RunStore(assay_home)
    base = _store_run(store, 20e9, more=curve(1.5e-6))
    _store_run(store, 20e9, more=curve(3e-6))  # twice the start-up latency
    md = run_cli("compare", base, "-f", "md", home=assay_home, check=True).stdout
    alpha = next(ln for ln in md.splitlines() if ln.startswith("| p2p.hockney.alpha |"))
    assert "| mpi=ompi, source=latency | 1.50 | 3.00 | us | 0.500 | worse |" in alpha


def test_cli_fail_below_gives_an_exit_code_ci_can_use(assay_home: Path):
    store = RunStore(assay_home)
    base = _store_run(store, 20e9)
    _store_run(store, 15e9)
    proc = run_cli("compare", base, "--fail-below", "0.95", home=assay_home)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "0.750" in proc.stdout and "worse ✗" in proc.stdout
    assert "1 figure(s) below 0.95 x the reference" in proc.stderr
    md = run_cli("compare", base, "--fail-below", "0.95", "-f", "md", home=assay_home).stdout
    assert "| memory.triad | threads=2 | 20.00 | 15.00 | GB/s | 0.750 | worse ✗ |" in md
    proc = run_cli("compare", base, "--fail-below", "0.5", home=assay_home)
    assert proc.returncode == 0


def test_plan_io_reads_the_seeds_example(assay_home: Path):
    proc = run_cli("plan-io", "--latency", "1.3ms", "--iops", "5000", home=assay_home)
    assert proc.returncode == 0 and "→ 7 thread(s)" in proc.stdout
    proc = run_cli("plan-io", "--latency", "1300us", "--iops", "5000", "--hosts", "2",
                   home=assay_home)  # fmt: skip
    assert "→ 4 thread(s) per host" in proc.stdout
    proc = run_cli("plan-io", "--latency", "fast", "--iops", "5", home=assay_home)
    assert proc.returncode == 2 and "expected a duration" in proc.stderr


def test_cli_a_gate_that_cannot_shut_is_refused(assay_home: Path):
    """issue 28: ``--tolerance nan`` and ``--fail-below nan|inf|-5|0`` were taken, and a run
    3x worse then exited 0. Each is refused (exit 2) naming the value."""
    store = RunStore(assay_home)
    base = _store_run(store, 30e9)
    _store_run(store, 10e9)
    gates = [["--fail-below", v] for v in ("nan", "inf", "-5", "0", "1.5")]
    gates += [
        ["--fail-below", "0.95", "--tolerance", v]
        for v in ("nan", "inf", "-inf:0.1", "-0.1:nan", "-5:0.1", "0.5:1", "1e9")
    ]
    for gate in gates:
        proc = run_cli("compare", base, *gate, home=assay_home)
        assert proc.returncode == 2, (gate, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and gate[-1] in proc.stderr
