"""RDMA tables (perftest): bandwidth as ``ib_send_bw -a`` prints it, and the latency
distribution as ``ib_send_lat`` does."""

from __future__ import annotations

from assay.analysis.series import by_series_and_size
from assay.analysis.stats import Figure
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


def rdma_tables(figures: list[Figure]) -> list[Table]:
    """The latency distribution per device, then the bandwidth table per device."""
    return latency_stats_tables(figures, "rdma.latency", "RDMA latency") + rdma_bandwidth_tables(
        figures
    )


def rdma_bandwidth_tables(figures: list[Figure]) -> list[Table]:
    """perftest's bandwidth table (``ib_send_bw -a``): MiB/s as perftest prints it, and Gb/s."""
    tables = []
    for label, per in sorted(by_series_and_size(figures, "rdma.bandwidth").items()):
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
