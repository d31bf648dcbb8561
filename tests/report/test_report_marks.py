"""Issue 19's report parts on a real run (``assay run quick`` on the project's 2-vCPU EPYC VM,
OpenMPI 4.1.4 and MPICH 4.0.2, tests/fixtures/assay-json): a row's best is marked only where
the difference is significant by the test ``assay compare`` uses, and the spread shown beside a
figure is a robust one, named."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from assay.analysis.compare.significant_best import significant_best
from assay.analysis.statistics.significance import welch
from assay.analysis.statistics.spread import robust_spread
from assay.analysis.statistics.stats import fold_repetitions
from assay.model import RunInfo, Sample, Stats, System
from assay.report.build import build_tables
from assay.report.render import render
from assay.store.rundir import LoadedRun

FIXTURE = Path(__file__).parents[1] / "fixtures" / "assay-json" / "quick_2vcpu_epyc.json"


@pytest.fixture(scope="module")
def quick() -> LoadedRun:
    doc = json.loads(FIXTURE.read_text())
    samples = [Sample.from_dict(s) for s in doc["samples"]]
    info = RunInfo(run_id=doc["run"]["run_id"], created=doc["run"]["created"], suite="quick")
    return LoadedRun(info, Path("/nonexistent"), System(hostname="vm"), samples, [])


@pytest.fixture(scope="module")
def tables(quick: LoadedRun) -> dict:
    return {t.key: t for t in build_tables(quick)}


def _stats(quick: LoadedRun, metric: str, size: int, mpi: str) -> Stats:
    want = (metric, size, mpi)
    (s,) = [s for s in quick.samples if (s.metric, *map(s.params.get, ("size", "mpi"))) == want]
    assert s.stats is not None
    return s.stats


def _row(table, size: int) -> int:
    return next(i for i, r in enumerate(table.rows) if r[0] == str(size))


# -- "best" only when it is -------------------------------------------------------------------


def test_a_best_inside_the_noise_is_not_marked(quick, tables):
    lat = tables["p2p-latency"]
    assert lat.columns[1:] == ["Latency [us] (MPICH 4.0.2)", "Latency [us] (OpenMPI 4.1.4)"]
    # 16 B: MPICH's 1.51 us beside OpenMPI's 3.35 us, but Welch's t over the 10,000 iterations
    # of each (compare's test when each side has one repetition) finds no difference
    a, b = _stats(quick, "p2p.latency", 16, "mpich"), _stats(quick, "p2p.latency", 16, "openmpi")
    assert not welch(a.mean, a.stddev, a.n, b.mean, b.stddev, b.n).significant
    row = _row(lat, 16)
    assert lat.rows[row][1:] == ["1.51", "3.35"]
    assert not {(row, 1), (row, 2)} & lat.best


def test_a_significant_best_is_marked(quick, tables):
    lat = tables["p2p-latency"]
    # 8 B: 3.29 against 5.12 us, and the iterations agree (p = 0.005, MPICH's mean lower)
    a, b = _stats(quick, "p2p.latency", 8, "mpich"), _stats(quick, "p2p.latency", 8, "openmpi")
    test = welch(a.mean, a.stddev, a.n, b.mean, b.stddev, b.n)
    assert test.significant and a.mean < b.mean
    assert (_row(lat, 8), 1) in lat.best
    # 4 MiB: 2.41 ms against 5.55 ms
    assert (_row(lat, 4194304), 1) in lat.best


def test_a_best_the_iterations_contradict_is_not_marked(quick, tables):
    lat = tables["p2p-latency"]
    # 32 B: OpenMPI's figure is lower (1.65 against 2.34 us) but its iterations' mean is higher,
    # significantly (p = 0.011): the test speaks for MPICH, the figures for OpenMPI
    a, b = _stats(quick, "p2p.latency", 32, "mpich"), _stats(quick, "p2p.latency", 32, "openmpi")
    assert welch(a.mean, a.stddev, a.n, b.mean, b.stddev, b.n).significant and a.mean < b.mean
    row = _row(lat, 32)
    assert lat.rows[row][1:] == ["2.34", "1.65"]
    assert not {(row, 1), (row, 2)} & lat.best


def test_the_note_says_how_a_best_is_chosen(tables):
    for key in ("p2p-latency", "p2p-bandwidth"):
        note = next(n for n in tables[key].notes if "best" in n.lower())
        assert "significant" in note and "p < 0.05" in note and "Welch" in note, note
        assert re.search(r"marked in \d+ of \d+ rows", note), note


def test_bandwidth_marks_follow_the_same_rule(quick, tables):
    bw = tables["p2p-bandwidth"]
    marked = {bw.rows[r][0] for r, _ in bw.best}
    # 16 B: p = 0.07, not marked; 4 KiB: MPICH higher in both its figure and its iterations
    assert "16" not in marked and "4096" in marked
    # 256 B: MPICH's figure is higher but its iterations are significantly slower
    assert "256" not in marked


def _reps(values: list[float], mpi: str) -> list[Sample]:
    out = []
    for i, v in enumerate(values):
        s = Sample.make("p2p", "p2p.latency", v, {"size": 8, "mpi": mpi, "repetition": i})
        s.job_id = f"00{i}-p2p-{mpi}"
        out.append(s)
    return out


def test_repetitions_are_judged_by_mann_whitney():
    apart = fold_repetitions(_reps([1.0e-6, 1.1e-6, 1.05e-6, 1.02e-6, 1.08e-6], "a")
                             + _reps([2.0e-6, 2.1e-6, 2.2e-6, 2.05e-6, 2.15e-6], "b"))  # fmt: skip
    assert significant_best(apart, "lower") == 0
    assert significant_best(list(reversed(apart)), "lower") == 1
    # three repetitions a side can never reach p < 0.05 (the smallest p is 0.1)
    three = fold_repetitions(_reps([1.0e-6, 1.1e-6, 1.05e-6], "a")
                             + _reps([2.0e-6, 2.1e-6, 2.2e-6], "b"))  # fmt: skip
    assert significant_best(three, "lower") is None
    assert significant_best([apart[0], None], "lower") is None  # one value: nothing to choose


# -- a spread that informs --------------------------------------------------------------------


def test_the_latency_note_gives_a_robust_spread(quick, tables):
    lat = tables["p2p-latency"]
    notes = [n for n in lat.notes if n.startswith(("MPICH", "OpenMPI"))]
    # the coefficient of variation read "variation 78.7%–3535.9%": one stray iteration in 10,000
    assert not any("variation" in n or "3535.9%" in n for n in notes)
    # (p99 - median) / median over each size's iterations, lowest to highest
    spreads = [
        (st.p99 - st.median) / st.median
        for s in quick.samples
        if s.metric == "p2p.latency" and s.params["mpi"] == "mpich" and (st := s.stats)
    ]
    mpich = next(n for n in notes if n.startswith("MPICH"))
    assert f"{100 * min(spreads):.1f}%–{100 * max(spreads):.1f}%" in mpich
    assert "(p99 − median)/median" in mpich


def test_stream_shows_the_range_of_its_few_iterations(quick, tables):
    stream = tables["stream"]
    assert stream.columns[-1] == "spread"
    copy = next(r for r in stream.rows if r[0] == "Copy")
    st = _stats_of(quick, "memory.copy")
    # 9 timed iterations: too few for a tail that a stray one cannot move, so the whole range
    assert st.n == 9
    assert copy[-1] == f"{100 * (st.max - st.min) / st.median:.1f}%"
    assert any("spread = (max − min)/median" in n for n in stream.notes)


def _stats_of(quick: LoadedRun, metric: str) -> Stats:
    (s,) = [s for s in quick.samples if s.metric == metric]
    assert s.stats is not None
    return s.stats


def test_no_report_format_shows_a_coefficient_of_variation(quick):
    for fmt in ("term", "md", "html"):
        text = render(quick, fmt)
        assert "variation" not in text.lower(), fmt


@pytest.mark.parametrize(
    ("stats", "expected"),
    [
        # 10,000 iterations, one of them 6 ms: p99 is not moved by it (the CV was 19,800 %)
        (
            Stats(
                n=10000,
                min=3.7e-7,
                max=6.05e-3,
                mean=1.6e-6,
                median=4.3e-7,
                stddev=8.5e-5,
                p99=5.5e-7,
            ),
            ("p99", (5.5e-7 - 4.3e-7) / 4.3e-7),
        ),
        # 100 rates (p2p bandwidth): p99 is the 99th, so one stray fast iteration does not count
        (Stats(n=100, min=6.5e6, max=9.8e6, median=8.1e6, p99=9.6e6), ("p99", 1.5 / 8.1)),
        # fewer than 100 values: p99 would be the maximum; the range says so
        (Stats(n=9, min=6.0, max=11.0, median=8.0, p99=11.0), ("range", 5 / 8)),
        # a tool that gives min/max/mean only (IMB, OSU -f, IOR)
        (Stats(n=4, min=1.0, max=3.0, mean=2.0), ("range", 1.0)),
        (Stats(n=4, mean=2.0, stddev=0.1), None),
    ],
)
def test_robust_spread(stats: Stats, expected):
    got = robust_spread(stats)
    if expected is None:
        assert got is None
    else:
        assert (got.kind, got.value) == (expected[0], pytest.approx(expected[1]))
