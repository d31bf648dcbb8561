"""The plot of a response-time curve (matplotlib, SVG and PNG, reproducible bytes)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.drivers.fio.figures import PointFigures
from assay.drivers.fio.files import slug


def plot_curve(
    where: Path,
    name: str,
    points: list[tuple[int, PointFigures]],
    top: PointFigures,
    summary: Mapping[str, Any],
) -> tuple[str, str]:
    """``curve-<name>.svg`` and ``.png``: achieved IOPS against mean and p99 total latency,
    the uncontrolled run and the knee marked. Returns the file names (relative to ``where``)."""
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot
    import matplotlib.pyplot as plt

    xs = [f.iops for _, f in points]
    mean = [f.latency_s * 1e3 if f.latency_s else math.nan for _, f in points]
    p99 = [f.p99_s * 1e3 if f.p99_s else math.nan for _, f in points]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    ax.plot(xs, mean, "o-", label="mean latency")
    if any(not math.isnan(v) for v in p99):
        ax.plot(xs, p99, "s--", label="p99 latency")
    for (pct, f), y in zip(points, mean, strict=True):
        ax.annotate(f"{pct}%", (f.iops, y), textcoords="offset points", xytext=(4, -12),
                    fontsize=8)  # fmt: skip
    if top.latency_s:
        ax.plot([top.iops], [top.latency_s * 1e3], "x", color="black", markersize=9,
                label="uncontrolled (max)")  # fmt: skip
    if "knee_iops" in summary:
        kx, ky = summary["knee_iops"], summary["knee_latency_s"] * 1e3
        ax.plot([kx], [ky], "o", markersize=14, markerfacecolor="none", color="red",
                label=f"knee ({summary['knee_curve_pct']}%)")  # fmt: skip
    ax.set_xlabel("achieved IOPS")
    ax.set_ylabel("latency (ms)")
    ax.set_title(f"{name}: response-time curve (Vdbench iorate=curve)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    svg, png = f"curve-{slug(name)}.svg", f"curve-{slug(name)}.png"
    # no date and a fixed hash salt: the same curve gives the same SVG bytes
    with matplotlib.rc_context({"svg.hashsalt": "assay"}):
        fig.savefig(where / svg, format="svg", metadata={"Date": None})
    fig.savefig(where / png, format="png", metadata={"Software": None})
    plt.close(fig)
    return svg, png
