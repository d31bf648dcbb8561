"""The latency distribution behind each figure, in ``ib_send_lat``'s layout.

Shared by the MPI and RDMA families: one table per MPI (or RDMA device) with the minimum,
maximum, typical (median), average, standard deviation and percentiles of every size.
"""

from __future__ import annotations

from assay.analysis.derived.series import by_series_and_size
from assay.analysis.statistics.stats import Figure
from assay.report.table import Table, slug_key
from assay.units import format_value


def latency_stats_tables(
    figures: list[Figure], metric: str = "p2p.latency", what: str = "Latency statistics"
) -> list[Table]:
    """One ``ib_send_lat``-style table per MPI (or RDMA device): the distribution behind
    each latency."""
    tables = []
    for mpi, per in sorted(by_series_and_size(figures, metric).items()):
        rows = []
        for size in sorted(per):
            st = per[size].sample.stats
            if st is None:
                continue
            cells = [st.min, st.max, st.median, st.mean, st.stddev, st.p99, st.p999]
            rows.append(
                [str(size), str(st.n)]
                + [format_value(c, "us") if c is not None else "–" for c in cells]
            )
        if rows:
            cols = [
                "#bytes",
                "#iterations",
                "t_min[usec]",
                "t_max[usec]",
                "t_typical[usec]",
                "t_avg[usec]",
                "t_stdev[usec]",
                "99% percentile[usec]",
                "99.9% percentile[usec]",
            ]
            tables.append(
                Table(
                    f"{metric.replace('.', '-')}-stats-{slug_key(mpi)}",
                    f"{what}, {mpi} (ib_send_lat layout)",
                    cols,
                    rows,
                    ["t_typical is the median; percentiles by nearest rank over every iteration."],
                )
            )
    return tables
