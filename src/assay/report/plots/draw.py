"""Plot functions: small data classes in, one SVG string out, styled once.

Each function draws one kind of plot the seed pages show (latency and bandwidth against message
size, STREAM per domain, the load-latency ladder, rates against Rpeak, response-time curves, an
all-pairs heatmap, a history, a comparison). They take plain data, not runs, so the families
that will feed them later (GPU, all-pairs, history) can be drawn and tested today.

matplotlib is imported on first use only: ``assay --help`` must not pay for it. Text is drawn
as paths (``svg.fonttype = path``) so the SVG needs no font, and with a fixed hash salt and no
date the same data give the same bytes. Labels are data: ``$`` is escaped so matplotlib never
reads a label as mathtext, and the SVG writer escapes ``<``, ``&`` and comment markers.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.textutil import visible

# One palette for every plot (colour-blind safe, Okabe–Ito), and the verdict colours.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
VERDICT_COLOURS = {
    "better": "#009E73",
    "worse": "#D55E00",
    "same": "#999999",
    "not significant": "#999999",
    "not comparable": "#DDDDDD",
    "unknown": "#DDDDDD",
}
FLAG_COLOUR = "#C0001A"  # not in the palette: a flag never looks like a series
STYLE = {
    "svg.fonttype": "path",
    "svg.hashsalt": "assay",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "figure.dpi": 100,
}
SIZE = (7.0, 4.0)  # inches: 700 × 400 px, a page column


@dataclass
class Line:
    """One series: x and y, optionally a band (lo, hi) around y (min–max, or to p99)."""

    label: str
    xs: Sequence[float]
    ys: Sequence[float]
    lo: Sequence[float] | None = None
    hi: Sequence[float] | None = None


@dataclass
class Bar:
    label: str
    value: float
    flagged: bool = False  # drawn in the flag colour, with a note in the legend
    group: str = ""  # bars of one group share a colour (a precision, a scope)
    note: str = ""  # written above the bar ("27% of Rpeak", "3 reps")


@dataclass
class Curve:
    """A response-time curve: achieved IOPS against mean and p99 latency (seconds)."""

    label: str
    iops: Sequence[float]
    mean_s: Sequence[float]
    p99_s: Sequence[float | None] = ()
    knee: tuple[float, float] | None = None  # (IOPS, mean latency s)


@dataclass
class VerdictBar:
    label: str
    ratio: float  # > 1: better
    verdict: str  # a key of VERDICT_COLOURS


@dataclass
class History:
    """A metric across runs, oldest first; change points are indexes where a new level starts."""

    runs: Sequence[str]
    values: Sequence[float]
    change_points: Sequence[int] = ()
    levels: Sequence[float] = ()  # the mean of each segment, one per change point + 1


@dataclass
class Heatmap:
    """An all-pairs matrix (row = sender, column = receiver); None where not measured."""

    labels: Sequence[str]
    values: Sequence[Sequence[float | None]]
    unit: str
    flagged: set[tuple[int, int]] = field(default_factory=set)
    marked: set[int] = field(default_factory=set)  # rows/columns holding a named node
    blocks: bool = False  # each cell a block of links (a large matrix downsampled)


def text(s: object) -> str:
    """A label as matplotlib must get it: ``$`` would start mathtext, so it is escaped; a
    control character or a lone surrogate (a non-UTF-8 label: FreeType cannot draw it, and
    the plot failed) is shown as its escape, as every table shows it (issue 28)."""
    return visible(str(s)).replace("$", r"\$")


def short(s: str, n: int) -> str:
    """A tick label cut to ``n`` characters (the table beside the plot has it whole)."""
    return s if len(s) <= n else s[: n - 1] + "…"


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display; before pyplot
    import matplotlib.pyplot as plt

    return plt


def _new(size: tuple[float, float] = SIZE) -> tuple[Any, Any]:
    plt = pyplot()
    import matplotlib

    with matplotlib.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=size)
    return fig, ax


def to_svg(fig: Any) -> str:
    """The figure as an SVG element (no XML prolog or DOCTYPE: it is inlined in HTML)."""
    import io

    import matplotlib

    plt = pyplot()
    buf = io.StringIO()
    with matplotlib.rc_context(STYLE), warnings.catch_warnings():
        # a layout that cannot fit every label is still drawn; the warning would only be noise
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg") :]


def _finish(fig: Any, ax: Any, title: str, xlabel: str, ylabel: str) -> Any:
    ax.set_title(text(title), loc="left")
    ax.set_xlabel(text(xlabel))
    ax.set_ylabel(text(ylabel))
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="best")
    return fig


def _lines(ax: Any, lines: Sequence[Line], scale: float = 1.0) -> None:
    for i, ln in enumerate(lines):
        colour = PALETTE[i % len(PALETTE)]
        ys = [y * scale for y in ln.ys]
        ax.plot(ln.xs, ys, "o-", ms=3, color=colour, label=text(ln.label))
        if ln.lo is not None and ln.hi is not None:
            lo = [v * scale for v in ln.lo]
            hi = [v * scale for v in ln.hi]
            ax.fill_between(ln.xs, lo, hi, color=colour, alpha=0.2, lw=0)


def _size_axis(ax: Any) -> None:
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(_bytes_formatter())


def _bytes_formatter() -> Any:
    from matplotlib.ticker import FuncFormatter

    def fmt(x: float, _pos: int) -> str:
        for unit, factor in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
            if x >= factor:
                return f"{x / factor:g}{unit}"
        return f"{x:g}"

    return FuncFormatter(fmt)


def latency_vs_size(lines: Sequence[Line], title: str = "MPI latency") -> Any:
    """Latency (s in, µs drawn) against message size, log–log, one line per MPI, with its band."""
    fig, ax = _new()
    _lines(ax, lines, 1e6)
    _size_axis(ax)
    ax.set_yscale("log")
    return _finish(fig, ax, title, "message size (bytes)", "latency (µs)")


def bandwidth_vs_size(
    lines: Sequence[Line], asymptotes: dict[str, float] | None = None, title: str = "Bandwidth"
) -> Any:
    """Bandwidth (B/s in, MB/s = 10^6 B/s drawn) against size; a dashed line at each series'
    Hockney asymptote β (``asymptotes``: label → B/s)."""
    fig, ax = _new()
    _lines(ax, lines, 1e-6)
    for i, ln in enumerate(lines):
        beta = (asymptotes or {}).get(ln.label)
        if beta and math.isfinite(beta):
            ax.axhline(
                beta * 1e-6,
                ls="--",
                lw=1,
                color=PALETTE[i % len(PALETTE)],
                label=text(f"Hockney β {ln.label}: {beta * 1e-6:,.0f} MB/s"),
            )
    _size_axis(ax)
    ax.set_yscale("log")
    return _finish(fig, ax, title, "message size (bytes)", "bandwidth (MB/s)")


def bars(
    items: Sequence[Bar],
    title: str,
    ylabel: str,
    scale: float = 1.0,
    references: dict[str, float] | None = None,
    flag_label: str = "flagged",
) -> Any:
    """Bars, one colour per group, flagged bars in the flag colour; ``references`` draws a
    dashed line per named level (an Rpeak, the node's figure)."""
    fig, ax = _new()
    groups = list(dict.fromkeys(b.group for b in items))
    xs = list(range(len(items)))
    colours = [
        FLAG_COLOUR if b.flagged else PALETTE[groups.index(b.group) % len(PALETTE)] for b in items
    ]
    drawn = ax.bar(xs, [b.value * scale for b in items], color=colours, width=0.6)
    for rect, b in zip(drawn, items, strict=True):
        if b.note:
            ax.annotate(
                text(b.note),
                (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                ha="center",
                va="bottom",
                fontsize=7,
                xytext=(0, 2),
                textcoords="offset points",
            )
    ax.set_xlim(-0.7, max(len(items), 2) - 0.3)
    ax.set_xticks(xs, [text(b.label) for b in items], rotation=30 if len(items) > 6 else 0)
    legend = [_patch(PALETTE[i % len(PALETTE)], g) for i, g in enumerate(groups) if g]
    if any(b.flagged for b in items):
        legend.append(_patch(FLAG_COLOUR, flag_label))
    for i, (name, level) in enumerate((references or {}).items()):
        ax.axhline(level * scale, ls="--", lw=1, color=PALETTE[(i + 6) % len(PALETTE)])
        ax.annotate(
            text(name),
            (0, level * scale),
            xycoords=("axes fraction", "data"),
            fontsize=8,
            xytext=(2, 2),
            textcoords="offset points",
        )
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.08)  # room for the notes above the bars
    ax.grid(axis="x", visible=False)
    _finish(fig, ax, title, "", ylabel)
    if legend:
        ax.legend(handles=legend, loc="upper right")
    return fig


def _patch(colour: str, label: str) -> Any:
    from matplotlib.patches import Patch

    return Patch(color=colour, label=text(label))


def latency_ladder(
    lines: Sequence[Line], caches: dict[str, float] | None = None, title: str = "Load latency"
) -> Any:
    """ns per load (s in) against working set, log x; a dotted line at each cache size."""
    fig, ax = _new()
    _lines(ax, lines, 1e9)
    for name, size in (caches or {}).items():
        ax.axvline(size, ls=":", color="#666666", lw=1)
        ax.annotate(
            text(name),
            (size, 1),
            xycoords=("data", "axes fraction"),
            fontsize=8,
            xytext=(-2, -10),
            textcoords="offset points",
            ha="right",
        )
    _size_axis(ax)
    ax.set_yscale("log")
    return _finish(fig, ax, title, "working set (bytes)", "latency per load (ns)")


def response_curves(curves: Sequence[Curve], title: str = "Response-time curves") -> Any:
    """Achieved IOPS against mean (solid) and p99 (dashed) latency in ms, one colour per
    workload or client group, the knee circled."""
    fig, ax = _new()
    for i, c in enumerate(curves):
        colour = PALETTE[i % len(PALETTE)]
        ax.plot(
            c.iops,
            [v * 1e3 for v in c.mean_s],
            "o-",
            ms=3,
            color=colour,
            label=text(f"{c.label} mean"),
        )
        p99 = [(x, v * 1e3) for x, v in zip(c.iops, c.p99_s, strict=False) if v is not None]
        if p99:
            ax.plot(
                *zip(*p99, strict=True), "s--", ms=3, color=colour, label=text(f"{c.label} p99")
            )
        if c.knee:
            ax.plot(
                [c.knee[0]],
                [c.knee[1] * 1e3],
                "o",
                ms=12,
                mfc="none",
                color=FLAG_COLOUR,
                label=text(f"{c.label} knee"),
            )
    ax.set_ylim(bottom=0)
    return _finish(fig, ax, title, "achieved IOPS", "latency (ms)")


def panels(rows: Sequence[tuple[str, Sequence[Line]]], title: str) -> Any:
    """Values against time in seconds, one panel per quantity (its axis title first), stacked
    on one time axis; a line keeps its colour in every panel."""
    plt = pyplot()
    import matplotlib

    with matplotlib.rc_context(STYLE):
        fig, axes = plt.subplots(len(rows), 1, sharex=True, squeeze=False,
                                 figsize=(SIZE[0], 1.6 * len(rows) + 0.8))  # fmt: skip
    colours: dict[str, str] = {}
    for ax, (ylabel, lines) in zip(axes[:, 0], rows, strict=True):
        for ln in lines:
            colour = colours.setdefault(ln.label, PALETTE[len(colours) % len(PALETTE)])
            ax.plot(ln.xs, ln.ys, "-", lw=1, color=colour, label=text(ln.label))
        ax.set_ylabel(text(ylabel))
    axes[0, 0].set_title(text(title), loc="left")
    axes[0, 0].legend(loc="best", fontsize=7)
    axes[-1, 0].set_xlabel("time since the probe started (s)")
    return fig


def heatmap(h: Heatmap, title: str = "All pairs") -> Any:
    """An all-pairs matrix as colours, each cell's value written in it, flagged cells boxed."""
    import numpy as np

    n = len(h.labels)
    if h.blocks:  # up to 64 blocks a side: a fixed size, every k-th group named
        fig, ax = _new((10.0, 9.0))
    else:
        fig, ax = _new((max(4.0, 0.5 * n + 2), max(3.5, 0.45 * n + 1.5)))
    grid = np.array([[math.nan if v is None else v for v in row] for row in h.values], float)
    im = ax.imshow(grid, cmap="viridis")
    fig.colorbar(im, ax=ax, label=text(h.unit))
    step = max(1, math.ceil(n / 16)) if h.blocks else 1
    ticks = list(range(0, n, step))
    ax.set_xticks(ticks, [text(h.labels[i]) for i in ticks], rotation=45, ha="right")
    ax.set_yticks(ticks, [text(h.labels[i]) for i in ticks])
    ax.grid(False)
    for i in sorted(h.marked):  # a named node's group, on both axes
        ax.plot([-0.5], [i], ">", color=FLAG_COLOUR, ms=7, clip_on=False)
        ax.plot([i], [-0.5], "v", color=FLAG_COLOUR, ms=7, clip_on=False)
    if n <= 16 and not h.blocks:
        for r in range(n):
            for c in range(n):
                if not math.isnan(grid[r, c]):
                    ax.text(
                        c,
                        r,
                        f"{grid[r, c]:.3g}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="white",
                    )
    for r, c in h.flagged:
        ax.add_patch(_box(r, c))
    if h.blocks:
        return _finish(fig, ax, title, "nodes (block)", "nodes (block)")
    return _finish(fig, ax, title, "receiver", "sender")


def _box(r: int, c: int) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec=FLAG_COLOUR, lw=2)


def history(h: History, title: str, ylabel: str) -> Any:
    """A metric run by run, each segment's level drawn flat, a change point as a vertical line."""
    fig, ax = _new()
    title = short(title, 80)
    xs = list(range(len(h.values)))
    ax.plot(xs, h.values, "o-", ms=3, color=PALETTE[0], label="value")
    bounds = [0, *h.change_points, len(h.values)]
    for i, level in enumerate(h.levels):
        ax.hlines(
            level,
            bounds[i] - 0.4,
            bounds[i + 1] - 0.6,
            colors=PALETTE[2],
            lw=2,
            label="segment level" if i == 0 else None,
        )
    for j, cp in enumerate(h.change_points):
        ax.axvline(
            cp - 0.5, color=FLAG_COLOUR, ls="--", lw=1, label="change point" if j == 0 else None
        )
    step = max(1, len(xs) // 12)
    ax.set_xticks(xs[::step], [text(r) for r in list(h.runs)[::step]], rotation=30, ha="right")
    return _finish(fig, ax, title, "run", ylabel)


def comparison(rows: Sequence[VerdictBar], title: str = "Against the reference") -> Any:
    """One bar per figure: the ratio (> 1 better, log scale), coloured by verdict, a line at 1."""
    fig, ax = _new((9.0, max(2.5, 0.2 * len(rows) + 1)))
    ys = list(range(len(rows)))
    # bars grow from 1 on a log axis: 2× better and 2× worse are the same length
    colours = [VERDICT_COLOURS.get(r.verdict, "#999999") for r in rows]
    ratios = [r.ratio if r.ratio > 0 else math.nan for r in rows]
    ax.barh(ys, [x - 1 for x in ratios], left=1, color=colours)
    ax.set_xscale("log")
    ax.set_yticks(ys, [text(short(r.label, 60)) for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", lw=1)
    legend = [_patch(c, v) for v, c in VERDICT_COLOURS.items() if any(r.verdict == v for r in rows)]
    ax.grid(axis="y", visible=False)
    _finish(fig, ax, title, "ratio (> 1: this run is better)", "")
    ax.legend(handles=legend, loc="lower right")
    return fig
