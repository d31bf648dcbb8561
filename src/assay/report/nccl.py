"""NCCL collectives in nccl-tests' own layout: one table per collective and test, a row per
size, out-of-place then in-place time, algbw and busbw, and the test's "# Avg bus bandwidth".

The figures are ``gpu.nccl.<op>.time`` (s), ``.algbw`` and ``.busbw`` (B/s), with ``size`` and
``buffers`` params (assay's NCCL probe and imported nccl-tests alike), and
``gpu.nccl.<op>.avg.busbw``, the footer nccl-tests prints. A test is what the params other
than the row's own (size, count, buffers) say: the file, the run, the type, the rank.
"""

from __future__ import annotations

from typing import Any

from assay.analysis.statistics.stats import Figure
from assay.report.table import Table

PREFIX = "gpu.nccl."
LAYOUTS = ("out-of-place", "in-place")
ROW_PARAMS = ("size", "count", "buffers")
COLUMNS = (("time", "time (us)", 1e6, 2), ("algbw", "algbw (GB/s)", 1e-9, 2),
           ("busbw", "busbw (GB/s)", 1e-9, 2))  # fmt: skip
TITLE_PARAMS = ("mpi_label", "run", "rank", "host", "type", "redop", "root", "ranks")
NOTE = (
    "As nccl-tests prints them: time per collective in us, algbw = size / time and busbw = "
    "algbw x the collective's factor (2(n-1)/n for all_reduce), in GB/s = 10^9 B/s."
)

# In place on one rank NCCL returns at once: nccl-tests' algbw (size / time) read 2,000,000 GB/s
# on an H100 at 1 GiB, far past any memory, so those cells are marked, never a bandwidth.
ONE_RANK = (
    "1 rank: nothing crosses a link (busbw 0 by definition); out of place the collective is a "
    "device copy, in place it moves no data, so its algbw (marked) is no bandwidth."
)
NO_DATA = " (no data moved)"


def nccl_figures(figures: list[Figure]) -> list[Figure]:
    return [f for f in figures if f.sample.metric.startswith(PREFIX)]


def _split(metric: str) -> tuple[str, str]:
    """gpu.nccl.all_reduce.busbw -> (all_reduce, busbw); .avg.busbw -> (op, avg.busbw)."""
    rest = metric.removeprefix(PREFIX)
    op, _, what = rest.partition(".")
    return op, what


def _test_key(op: str, params: dict[str, Any]) -> tuple:
    return (op, tuple(sorted((k, repr(v)) for k, v in params.items() if k not in ROW_PARAMS)))


def _title(op: str, params: dict[str, Any]) -> str:
    said = [f"{k}={params[k]}" for k in TITLE_PARAMS if k in params and k != "mpi_label"]
    label = params.get("mpi_label") or params.get("tool") or ""
    head = f"NCCL {op} (nccl-tests layout)" + (f", {label}" if label else "")
    return head + (f" ({', '.join(said)})" if said else "")


def _cell(fig: Figure | None, scale: float, digits: int) -> str:
    return "–" if fig is None else f"{fig.sample.value * scale:.{digits}f}"


def _table(op: str, params: dict[str, Any], figs: list[Figure]) -> Table:
    by: dict[tuple[Any, str, str], Figure] = {}
    average = None
    for f in figs:
        _, what = _split(f.sample.metric)
        if what == "avg.busbw":
            average = f
            continue
        by[(f.sample.params.get("size"), str(f.sample.params.get("buffers")), what)] = f
    sizes = sorted({size for size, _, _ in by if isinstance(size, int | float)})
    layouts = [p for p in LAYOUTS if any(k[1] == p for k in by)]
    columns = ["size (B)"] + [f"{p} {name}" for p in layouts for _, name, _, _ in COLUMNS]
    one_rank = params.get("ranks") == 1
    rows = [
        [str(int(size))]
        + [
            _cell(fig := by.get((size, p, what)), scale, d)
            + (NO_DATA if fig and one_rank and p == "in-place" and what == "algbw" else "")
            for p in layouts
            for what, _, scale, d in COLUMNS
        ]
        for size in sizes
    ]
    notes = [NOTE] + ([ONE_RANK] if one_rank else [])
    if average is not None:
        notes.append(
            f"Avg bus bandwidth: {average.sample.value * 1e-9:.4f} GB/s (nccl-tests' own footer)"
        )
    source = params.get("source_file")
    if source:
        notes.append(f"From {source}.")
    return Table(f"nccl-{op}", _title(op, params), columns, rows, notes)


def nccl_tables(figures: list[Figure]) -> list[Table]:
    """A table per collective and test, in the order the figures came; each footer
    (``avg.busbw``, which has no row params and fewer others) joins the test whose params
    hold all of its own."""
    tests: dict[tuple, tuple[str, dict[str, Any], list[Figure]]] = {}
    footers = []
    for f in nccl_figures(figures):
        op, what = _split(f.sample.metric)
        if what == "avg.busbw":
            footers.append((op, f))
            continue
        key = _test_key(op, f.sample.params)
        tests.setdefault(key, (op, f.sample.params, []))[2].append(f)
    for op, f in footers:
        home = next(
            (figs for o, params, figs in tests.values()
             if o == op and all(params.get(k) == v for k, v in f.sample.params.items())),
            None,
        )  # fmt: skip
        if home is None:
            tests[_test_key(op, f.sample.params)] = (op, f.sample.params, [f])
        else:
            home.append(f)
    return [_table(op, params, figs) for op, params, figs in tests.values()]
