"""A run against a published reference set: which published point each figure meets.

Every param the published point states must be equal in the run's figure (MPIs by family —
"OpenMPI 4.0.0" on the page matches any Open MPI; precision "d"/"dp" alike; a STREAM without a
scope ran on the whole node), and its probe when it names one. ``nodes`` is placement, not
identity: a 2-node reference against a 1-node figure gives a row whose verdict is "not
comparable" (shared memory is not InfiniBand). A run figure that no published point matches
exactly may still be compared with a point that only differs by MPI (the HB page's bandwidth
table is MVAPICH2's), and the row says so. A point with ``pick = "best"`` meets only the best of
the figures it matches (a page's headline is its best figure); ``stat`` compares one of the
figure's statistics (the HB summary's RDMA latency is ib_send_lat's t_min). The verdict, ratio
and significance are ``assay.analysis.compare.verdict``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from assay.analysis.compare.verdict import (
    Comparison,
    Measured,
    Row,
    judge,
    row_order,
    sig_text,
    significance,
)
from assay.references.model import ReferenceSet, RefPoint, Tolerance
from assay.units import metric_info

PLACEMENT = ("nodes",)


# In this order: "mvapich" contains "mpich", and Intel MPI is MPICH-derived.
_MPI_NAMES = (("mvapich", "mvapich"), ("intel", "intel"), ("impi", "intel"),
              ("openmpi", "openmpi"), ("ompi", "openmpi"), ("mpich", "mpich"))  # fmt: skip


def mpi_family(name: str, flavors: Mapping[str, str] | None = None) -> str:
    """'openmpi', 'mpich', 'mvapich', 'intel' or the name itself: what a page's column means."""
    flavor = (flavors or {}).get(name)
    if flavor and flavor != "unknown":
        return flavor
    low = name.lower().replace(" ", "").replace("-", "").replace("_", "")
    for key, family in _MPI_NAMES:
        if key in low:
            return family
    return low


_PRECISION = {"d": "d", "dp": "d", "double": "d", "fp64": "d", "s": "s", "sp": "s", "single": "s",
              "fp32": "s"}  # fmt: skip


def _norm(key: str, value: Any, flavors: Mapping[str, str] | None) -> str:
    if key == "mpi":
        return mpi_family(str(value), flavors)
    if key == "precision":
        return _PRECISION.get(str(value).lower(), str(value).lower())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


# What a figure that does not state a param measured: STREAM output imported from the tool
# itself has no scope, and it ran on the whole node.
IMPLIED = {"scope": "node"}


def param(params: Mapping[str, Any], key: str) -> Any:
    """A figure's param, or what its absence means (``IMPLIED``), else None."""
    return params.get(key, IMPLIED.get(key))


def matches(
    point: RefPoint, fig: Measured, flavors: Mapping[str, str] | None = None, *, soft_mpi=False
) -> bool:
    if point.metric != fig.metric or (point.probe and point.probe != fig.probe):
        return False
    for k, v in point.params.items():
        if k in PLACEMENT or (soft_mpi and k == "mpi"):
            continue
        mine = param(fig.params, k)
        if mine is None or _norm(k, mine, flavors) != _norm(k, v, flavors):
            return False
    return True


def compare_reference(
    figures: list[Measured],
    ref: ReferenceSet,
    *,
    flavors: Mapping[str, str] | None = None,
    tolerances: Mapping[str, Tolerance] | None = None,
    default_nodes: int | None = 1,
) -> Comparison:
    """Every figure of a run against a reference set (see the module docstring).

    ``tolerances`` (per metric, or "default") override the set's; ``default_nodes`` is the
    placement of figures that do not record theirs (None: unknown, e.g. imported output).
    """
    out = Comparison()
    covered: set[int] = set()
    unmatched_points: list[RefPoint] = []
    for point in ref.points:
        cands = [f for f in figures if matches(point, f, flavors)]
        if not cands:
            unmatched_points.append(point)
            continue
        covered.update(id(f) for f in cands)
        if point.pick == "best":
            cands = [_best(cands, point)]
        for fig in cands:
            out.rows.append(_row(point, fig, ref, tolerances, default_nodes))
    # run figures no point matched exactly: a point that differs only by MPI, said in the note
    used_soft: set[int] = set()
    for fig in figures:
        if id(fig) in covered:
            continue
        near = [
            p for p in ref.points if "mpi" in p.params and matches(p, fig, flavors, soft_mpi=True)
        ]
        if near:
            covered.add(id(fig))
            used_soft.add(id(near[0]))
            row = _row(near[0], fig, ref, tolerances, default_nodes)
            note = f"reference measured with {near[0].label or near[0].params['mpi']}"
            out.rows.append(_replace_note(row, note))
    out.rows.sort(key=row_order)
    counts: dict[str, int] = {}
    for fig in figures:
        if id(fig) not in covered:
            counts[fig.metric] = counts.get(fig.metric, 0) + 1
    out.unmatched = sorted(counts.items())
    missing: dict[str, int] = {}
    for p in unmatched_points:
        if id(p) in used_soft:
            continue
        what = f"{p.metric} ({p.label or p.section or p.published})"
        missing[what] = missing.get(what, 0) + 1
    out.missing = sorted(missing.items())
    return out


def _best(cands: list[Measured], point: RefPoint) -> Measured:
    known = [f for f in cands if f.stat(point.stat) is not None] or cands
    higher = metric_info(point.metric).better == "higher"
    return (max if higher else min)(known, key=lambda f: f.stat(point.stat) or 0.0)


def _row(
    point: RefPoint,
    fig: Measured,
    ref: ReferenceSet,
    tolerances: Mapping[str, Tolerance] | None,
    default_nodes: int | None,
) -> Row:
    tol = _tolerance(point, ref, tolerances)
    info = metric_info(point.metric)
    ours = fig.stat(point.stat)
    shown = _shown_params(point, fig)
    label = point.label or point.section
    notes = [point.note] if point.note else []
    if point.stat != "value":
        notes.append(f"compares the {point.stat}")
    ref_nodes = point.params.get("nodes")
    run_nodes = fig.params.get("nodes", default_nodes)
    lo = point.low if point.low is not None or point.high is not None else point.value
    hi = point.high if point.low is not None or point.high is not None else point.value
    nearest = point.value
    if ours is None:
        return Row(point.metric, shown, label, nearest, point.published, None, point.stat,
                   point.unit, info.better, None, "not comparable", "unknown", None, tol,
                   _join(notes, f"this run has no {point.stat} for this figure"))  # fmt: skip
    verdict, ratio = judge(ours, lo, hi, info.better, tol)
    if ref_nodes is not None and run_nodes is not None and int(run_nodes) != int(ref_nodes):
        verdict = "not comparable"
        notes.append(f"reference on {ref_nodes} nodes, this run on {run_nodes}")
    elif ref_nodes is not None and run_nodes is None:
        notes.append(f"reference on {ref_nodes} nodes; this figure's placement is unknown")
    test = significance(None, fig, point.stats) if point.stat == "value" else None
    if lo is not None and ours < lo:
        nearest = lo
    elif hi is not None and ours > hi:
        nearest = hi
    return Row(point.metric, shown, label, nearest, point.published, ours, point.stat, point.unit,
               info.better, ratio, verdict, sig_text(test), test, tol, _join(notes))  # fmt: skip


def _tolerance(
    point: RefPoint, ref: ReferenceSet, overrides: Mapping[str, Tolerance] | None
) -> Tolerance:
    if overrides:
        if point.metric in overrides:
            return overrides[point.metric]
        if "default" in overrides and point.tolerance is None:
            return overrides["default"]
    return ref.tolerance_for(point)


def _shown_params(point: RefPoint, fig: Measured) -> tuple[tuple[str, str], ...]:
    keys = [k for k in point.params if k not in PLACEMENT]
    for k in ("size", "mpi", "scope", "domain", "threads", "direction", "operation", "bs"):
        if k in fig.params and k not in keys:
            keys.append(k)
    shown = []
    for k in keys:
        if k in fig.params:
            v = (
                fig.params["mpi_label"]
                if k == "mpi" and "mpi_label" in fig.params
                else fig.params[k]
            )
            shown.append((k, str(v)))
    return tuple(shown)


def _replace_note(row: Row, note: str) -> Row:
    return replace(row, note=_join([row.note] if row.note else [], note))


def _join(notes: list[str], *more: str) -> str:
    return "; ".join([*notes, *more]) if (notes or more) else ""
