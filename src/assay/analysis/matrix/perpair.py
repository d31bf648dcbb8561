"""All-pairs runs made before the all-pairs probe: one sample (or figure) per pair and message
size (placement ``all-pairs``, the pair's two hosts in ``hosts``), as the per-pair steps stored
them. Each (metric, MPI) becomes a ``LinkMatrix`` (hosts in sorted order, each link the median
of its repetitions), analysed like the probe's (``assay.analysis.matrix.allpairs.analyse``); such
runs stay reportable."""

from __future__ import annotations

import statistics
from collections import defaultdict

from assay.analysis.derived.shared_memory import shared_links
from assay.analysis.matrix.allpairs import METRICS, PairMatrix, analyse
from assay.analysis.matrix.linkmatrix import LinkMatrix, RepeatSpread, Retests, from_pairs
from assay.analysis.statistics.outliers import OutlierRule
from assay.analysis.statistics.stats import Figure
from assay.condensed import link_index
from assay.model import Sample


def _pair(sample: Sample) -> tuple[str, str] | None:
    hosts = sample.params.get("hosts")
    if not isinstance(hosts, list) or len(hosts) != 2 or hosts[0] == hosts[1]:
        return None
    a, b = sorted(str(h) for h in hosts)
    return a, b


def _concurrent(group: list[Figure]) -> int:
    """Most pairs measured at once: recorded per sample (``concurrent_pairs``); runs stored
    before it was recorded measured a whole round at once, so their rounds' sizes tell."""
    params = [f.sample.params for f in group]
    recorded = [int(p["concurrent_pairs"]) for p in params if "concurrent_pairs" in p]
    if recorded:
        return max(recorded)
    per_round: dict[object, set[tuple[str, str]]] = defaultdict(set)
    for f in group:
        pair = _pair(f.sample)
        if pair:
            per_round[f.sample.params.get("round")].add(pair)
    return max((len(p) for p in per_round.values()), default=1)


def link_matrices(figures: list[Figure]) -> list[LinkMatrix]:
    """One LinkMatrix per (metric, MPI) from the per-pair figures of an all-pairs run made
    before the probe, folded per pair (``Folded.by_host``: each figure holds the values of one
    pair's repetitions). Hosts in sorted order, float64 values."""
    chosen = [
        f
        for f in figures
        if f.sample.params.get("placement") == "all-pairs"
        and f.sample.metric in METRICS
        and "size" in f.sample.params
        and "matrix" not in f.sample.params
    ]
    by_key: dict[tuple[str, str], list[Figure]] = defaultdict(list)
    for f in chosen:
        p = f.sample.params
        by_key[(f.sample.metric, str(p.get("mpi_label") or p.get("mpi") or "MPI"))].append(f)
    out = []
    for (metric, mpi), group in sorted(by_key.items()):
        sizes = {int(f.sample.params["size"]) for f in group}
        size = min(sizes) if metric == "p2p.latency" else max(sizes)
        per_pair: dict[tuple[str, str], list[float]] = defaultdict(list)
        for f in group:
            pair = _pair(f.sample)
            if pair and int(f.sample.params["size"]) == size:
                per_pair[pair].extend(f.values or (f.sample.value,))
        # Repetitions of a pair: their median, as the report folds repetitions.
        links = {p: statistics.median(v) for p, v in per_pair.items()}
        if not links:
            continue
        hosts = sorted({h for p in links for h in p})
        spreads = {p: max(v) / min(v) for p, v in per_pair.items() if len(v) > 1 and min(v) > 0}
        spread = None
        if spreads:
            (wa, wb), ratio = max(spreads.items(), key=lambda kv: kv[1])
            k = link_index(len(hosts), hosts.index(wa), hosts.index(wb))
            spread = RepeatSpread(int(k), ratio, statistics.median(spreads.values()))
        out.append(
            LinkMatrix(
                hosts,
                metric,
                group[0].sample.better,
                size,
                mpi,
                from_pairs(hosts, links),
                (min(len(v) for v in per_pair.values()), max(len(v) for v in per_pair.values())),
                spread,
                _concurrent(group),
                Retests.none(),
            )
        )
    # a pair whose latency was shared memory carried its bandwidth through it too
    latency = {lm.mpi: lm for lm in out if lm.metric == "p2p.latency"}
    for lm in out:
        lat = latency.get(lm.mpi)
        if lm.metric == "p2p.bandwidth" and lat is not None and lat.hosts == lm.hosts:
            lm.shared = shared_links(lat.values)
    return out


def matrices(figures: list[Figure], rule: OutlierRule | None = None) -> list[PairMatrix]:
    """One analysed matrix per (metric, MPI) from the per-pair figures of an all-pairs run
    made before the probe (:func:`link_matrices`, then :func:`analyse`)."""
    return [analyse(lm, rule) for lm in link_matrices(figures)]
