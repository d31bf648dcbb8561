"""Which series a figure belongs to: one MPI (or an import's label, or an RDMA device).

Reports draw one column per series, and the derive step fits one model per series, so both
group figures the same way, here.
"""

from __future__ import annotations

from collections import defaultdict

from assay.analysis.statistics.stats import Figure
from assay.model import Sample


def series_label(s: Sample) -> str:
    """The column a figure belongs to: its MPI, an import's label, or a perftest device."""
    p = s.params
    if p.get("mpi_label") or p.get("mpi"):
        return str(p.get("mpi_label") or p.get("mpi")) + _where(p)
    if p.get("device"):
        return f"{p.get('benchmark', '')} {p['device']}".strip()
    return "MPI"


def _where(p: dict) -> str:
    """Where a cluster measurement ran (Slurm placement): its hosts, so shared memory and a
    network link are never mixed up in one column."""
    hosts, placement = p.get("hosts"), p.get("placement")
    if not placement or not isinstance(hosts, list):
        return ""
    shown = "–".join(map(str, hosts)) if len(hosts) <= 4 else f"{len(hosts)} nodes"
    return f", {placement} {shown}"


# Params that tell apart the tests one imported file holds under one label: a run of a pasted
# session, a tool version, IMB-EXT's mode, IMB -multi groups, OMB's device buffers...
_SPLIT = (
    "run", "version", "mode", "groups", "group_ranks", "group", "device", "send_buffer",
    "recv_buffer", "pairs", "window", "sender_threads", "receiver_threads", "sender_processes",
    "receiver_processes", "datatype", "window_creation", "synchronization",
)  # fmt: skip


def _shown(key: str, value: object) -> str:
    return f"run {value}" if key == "run" else f"{key}={value}"


def _sized(params: dict) -> bool:
    """A size a curve can have: a whole number (a run stored before assay-json's params were
    checked may hold text, a list or null there)."""
    size = params.get("size")
    return type(size) is int or (type(size) is float and size.is_integer())


def by_series_and_size(figures: list[Figure], metric: str) -> dict[str, dict[int, Figure]]:
    """Series label -> size -> figure. Runs at several rank counts (IMB's #processes blocks)
    get a series each, and so do the tests of one label that differ in a ``_SPLIT`` param
    (runs of one file, IMB-EXT modes...), so no figure overwrites another."""
    chosen = [f for f in figures if f.sample.metric == metric and _sized(f.sample.params)]
    rank_counts = {f.sample.params.get("ranks") for f in chosen}
    labels = [series_label(f.sample) for f in chosen]
    values: dict[tuple[str, str], set[str]] = defaultdict(set)
    for f, label in zip(chosen, labels, strict=True):
        for key in _SPLIT:
            values[label, key].add(repr(f.sample.params.get(key)))
    out: dict[str, dict[int, Figure]] = defaultdict(dict)
    for f, label in zip(chosen, labels, strict=True):
        p = f.sample.params
        if len(rank_counts) > 1 and p.get("ranks") is not None:
            label += f", {p.get('ranks')} ranks"  # an import may not say
        for key in _SPLIT:
            if len(values[series_label(f.sample), key]) > 1 and key in p:
                label += f", {_shown(key, p[key])}"
        out[label][int(p["size"])] = f
    return dict(out)
