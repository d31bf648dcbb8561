"""The analysed all-pairs matrices of a run, cached beside it (``allpairs.cache.json``), so only
its first report reads and analyses the 5·10⁷ links of a 10,000-node file: the cache holds what
the report shows (per-node medians, the worst links, the distribution, the heatmap's cells, the
switch blocks: a few MB), never a link array beyond 64 nodes.

Stamped like ``figures.cache.json`` (``assay.store.cache``): the size and mtime of every
matrix file and topology file it was made from, the outlier rule and this module's version; a
cache that does not match is made again, one that cannot be written is no error.

The encoding is generic over the dataclasses of a ``PairMatrix`` (a registry: nothing else is
ever built from a cache), numpy arrays (dtype, shape, values), tuples, and dicts whose keys are
not strings (a link's pair of hosts).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from assay.analysis.matrix.allpairs import LostNode, PairMatrix
from assay.analysis.matrix.confirm import Confirmation
from assay.analysis.matrix.heat import Heat
from assay.analysis.matrix.matrixstats import Blocks, Distribution
from assay.analysis.matrix.topology import SlowPart, Switches
from assay.analysis.statistics.outliers import Centre, Outlier, OutlierRule
from assay.store.cache import read_cache, stamp, write_cache

CACHE_NAME = "allpairs.cache.json"
CACHE_VERSION = 2  # 2: shared-memory links and lost nodes
CLASSES = {
    c.__name__: c
    for c in (
        PairMatrix,
        LostNode,
        Confirmation,
        Heat,
        Blocks,
        Distribution,
        Centre,
        Outlier,
        OutlierRule,
        SlowPart,
        Switches,
    )
}


def encode(x: Any) -> Any:
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        name = type(x).__name__
        if name not in CLASSES:
            raise TypeError(f"{name} is not cached")
        return {
            "__dc__": name,
            **{f.name: encode(getattr(x, f.name)) for f in dataclasses.fields(x)},
        }
    if isinstance(x, np.ndarray):
        return {"__nd__": x.dtype.str, "shape": list(x.shape), "data": x.ravel().tolist()}
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, tuple):
        return {"__tuple__": [encode(v) for v in x]}
    if isinstance(x, dict):
        if all(isinstance(k, str) for k in x):
            return {k: encode(v) for k, v in x.items()}
        return {"__items__": [[encode(k), encode(v)] for k, v in x.items()]}
    if isinstance(x, list):
        return [encode(v) for v in x]
    return x


def decode(x: Any) -> Any:
    if isinstance(x, list):
        return [decode(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "__dc__" in x:
        cls = CLASSES[x["__dc__"]]
        return cls(**{k: decode(v) for k, v in x.items() if k != "__dc__"})
    if "__nd__" in x:
        return np.array(x["data"], dtype=np.dtype(x["__nd__"])).reshape(x["shape"])
    if "__tuple__" in x:
        return tuple(decode(v) for v in x["__tuple__"])
    if "__items__" in x:
        return {decode(k): decode(v) for k, v in x["__items__"]}
    return {k: decode(v) for k, v in x.items()}


SAMPLES = "samples.jsonl"  # the samples name the matrix files: a change to them voids it


def _made_from(run_dir: Path, files: list[str], rule: OutlierRule) -> dict[str, Any] | None:
    """What the analysis was made from: each matrix file by size and content digest (a file
    edited with its time kept is caught), and the rule it was judged by."""
    stamps = []
    for rel in files:
        s = stamp(run_dir / rel)
        if s is None:
            return None  # a file missing: nothing to cache (the report says so)
        stamps.append([rel, s.size, s.digest])
    return {"files": stamps, "rule": dataclasses.asdict(rule)}


def cached(
    run_dir: Path, files: list[str], rule: OutlierRule
) -> tuple[list[PairMatrix], list[str]] | None:
    """The run's analysed matrices from its cache, if made from exactly these files (and the
    run's samples as they are) with this rule; None otherwise."""
    made_from = _made_from(run_dir, files, rule)
    if made_from is None:
        return None
    hit = read_cache(run_dir / CACHE_NAME, CACHE_VERSION, run_dir / SAMPLES)
    if hit is None or hit.payload is None or hit.extra.get("made_from") != made_from:
        return None
    try:
        return decode(hit.payload["matrices"]), list(hit.payload["problems"])
    except (KeyError, TypeError, ValueError):
        return None  # damaged: made again


def save(
    run_dir: Path,
    files: list[str],
    rule: OutlierRule,
    matrices: list[PairMatrix],
    problems: list[str],
) -> bool:
    """Cache the analysed matrices; False (and nothing left behind) when it cannot be."""
    made_from = _made_from(run_dir, files, rule)
    samples = stamp(run_dir / SAMPLES)
    if made_from is None or samples is None:
        return False
    data = {"matrices": encode(matrices), "problems": problems}
    return write_cache(run_dir / CACHE_NAME, CACHE_VERSION, samples, data, {"made_from": made_from})
