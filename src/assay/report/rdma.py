"""RDMA tables (perftest): bandwidth as ``ib_send_bw -a`` prints it, and the latency
distribution as ``ib_send_lat`` does. A file of several tests (an ib_send_bw, ib_read_bw,
ib_write_bw session; a test run twice) gets a table per test: one table per series would keep
one row per size and lose the others."""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

from assay.analysis.derived.series import by_series_and_size, series_label
from assay.analysis.statistics.stats import Figure
from assay.report.distribution import latency_stats_tables
from assay.report.table import Table, slug_key
from assay.units import format_value

RDMA_PROBES = frozenset({"rdma", "perftest"})


def rdma_figures(figures: list[Figure]) -> list[Figure]:
    """perftest's figures (our pair driver's or imported), sizes known."""
    return [
        f
        for f in figures
        if f.sample.probe in RDMA_PROBES
        and f.sample.metric.startswith("rdma.")
        and "size" in f.sample.params
    ]


def _test_name(params: dict) -> str:
    """What tells one perftest test of a series from another: ib_read_bw, bidirectional, the
    duration mode (-D), the run index of a test run more than once."""
    parts = [str(params.get("benchmark", "perftest"))]
    if params.get("bidirectional"):
        parts.append("bidirectional")
    if params.get("mode"):
        parts.append(f"{params['mode']} mode")
    if params.get("run") is not None:
        parts.append(f"run {params['run']}")
    return " ".join(parts)


def _per_test(figures: list[Figure], metric: str) -> list[tuple[str, list[Figure]]]:
    """The figures of ``metric`` by test; the test's name where a series holds several."""
    groups: dict[tuple[str, str, int, str], list[Figure]] = defaultdict(list)
    for f in figures:
        p = f.sample.params
        if f.sample.metric == metric and "size" in p:
            run = p.get("run") if isinstance(p.get("run"), int) else 0
            bench = str(p.get("benchmark", ""))
            groups[(series_label(f.sample), bench, run, _test_name(p))].append(f)
    tests_per_label = Counter(key[0] for key in groups)
    return [  # in file order within a test: run 1, then run 2
        (key[3] if tests_per_label[key[0]] > 1 else "", figs)
        for key, figs in sorted(groups.items())
    ]


def rdma_tables(figures: list[Figure]) -> list[Table]:
    """The latency distribution per device and test, then the bandwidth table per device and
    test."""
    tables = []
    for test, figs in _per_test(figures, "rdma.latency"):
        for t in latency_stats_tables(figs, "rdma.latency", "RDMA latency"):
            if test:
                layout = " (ib_send_lat layout)"
                title = t.title.removesuffix(layout) + f", {test}{layout}"
                t = dataclasses.replace(t, key=f"{t.key}-{slug_key(test)}", title=title)
            tables.append(t)
    for test, figs in _per_test(figures, "rdma.bandwidth"):
        tables += rdma_bandwidth_tables(figs, test)
    return tables


def rdma_bandwidth_tables(figures: list[Figure], test: str = "") -> list[Table]:
    """perftest's bandwidth table (``ib_send_bw -a``): MiB/s as perftest prints it, and Gb/s;
    ``test`` names the test where a series holds several."""
    tables = []
    for series, per in sorted(by_series_and_size(figures, "rdma.bandwidth").items()):
        label = f"{series}, {test}" if test else series
        rows = []
        for size in sorted(per):
            s = per[size].sample
            peak = s.params.get("bw_peak")
            rate = s.params.get("msg_rate")
            rows.append(
                [
                    str(size),
                    str(s.params.get("iterations", "–")),
                    format_value(peak, "MiB/s") if isinstance(peak, float) else "–",
                    format_value(s.value, "MiB/s"),
                    format_value(s.value, "Gb/s"),
                    f"{rate / 1e6:.6f}" if isinstance(rate, float) else "–",  # op/s → Mpps
                ]
            )
        cols = [
            "#bytes",
            "#iterations",
            "BW peak[MiB/sec]",
            "BW average[MiB/sec]",
            "BW average[Gb/sec]",
            "MsgRate[Mpps]",
        ]
        notes = ["MiB = 2^20 B as perftest counts its MB/sec; Gb = 10^9 bit (--report_gbits)."]
        tables.append(
            Table(f"rdma-bw-{slug_key(label)}", f"RDMA bandwidth, {label}", cols, rows, notes)
        )
    return tables
