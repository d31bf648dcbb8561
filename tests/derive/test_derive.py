"""The derive step: the figures reports and comparisons both read, computed once."""

from __future__ import annotations

import pytest

from assay.analysis.compare.verdict import compare_runs, measured
from assay.analysis.derived.derive import derive
from assay.analysis.statistics.stats import fold_repetitions
from assay.model import Sample

ALPHA, BETA = 1.5e-6, 12e9
SIZES = [0] + [2**k for k in range(16)]


def latency_curve(mpi: str, alpha: float = ALPHA) -> list[Sample]:
    return [
        Sample.make("osu", "p2p.latency", alpha + n / BETA, {"size": n, "mpi": mpi}) for n in SIZES
    ]


def test_hockney_per_mpi_from_stored_latencies():
    derived = derive(fold_repetitions(latency_curve("openmpi") + latency_curve("mpich", 3e-6)))
    by = {h.series: h for h in derived.hockney}
    assert by["openmpi"].latency.alpha == pytest.approx(ALPHA, rel=1e-6)
    assert by["mpich"].latency.alpha == pytest.approx(3e-6, rel=1e-6)
    assert by["openmpi"].latency.beta == pytest.approx(BETA, rel=1e-6)
    assert by["openmpi"].bandwidth is None  # no bandwidth curve measured


def test_compare_judges_the_derived_figures_too():
    rows = compare_runs(
        measured(latency_curve("openmpi")), measured(latency_curve("openmpi", 3e-6))
    ).rows
    alpha = next(r for r in rows if r.metric == "p2p.hockney.alpha")
    assert alpha.ratio == pytest.approx(0.5, rel=1e-6)  # twice the latency: half as good
    assert alpha.verdict == "worse"
    assert dict(alpha.params) == {"mpi": "openmpi", "source": "latency"}


def fio(metric: str, value: float, direction: str, **params) -> Sample:
    p = {"workload": "randread-8k", "numjobs": 2, "iodepth": 2, "bs": 8192, "mode": "workloads",
         "direction": direction, "outstanding_expected": 4, **params}  # fmt: skip
    return Sample.make("fio", metric, value, p)


def test_littles_law_of_each_fio_point():
    samples = [
        fio("storage.iops", 1000.0, "read"),
        fio("storage.latency", 2e-3, "read", latency="total"),
        fio("storage.latency", 1e-3, "read", latency="completion"),  # not the one L = λW uses
    ]
    (point,) = derive(fold_repetitions(samples)).storage_points
    check = point.littles()
    assert check.measured_concurrency == pytest.approx(2.0)  # 1000/s × 2 ms
    assert check.ratio == pytest.approx(0.5) and check.queue_not_full
