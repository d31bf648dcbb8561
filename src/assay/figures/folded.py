"""A run's figures for its report: from the cache beside its records, else folded from its
stored sample lines in one pass (``assay.analysis.stats.Folder``) and cached.

A million stored samples fold in seconds without becoming a million objects; the cache (a few
thousand figures) makes every later report of the run a fraction of a second. The run's end
writes it (``assay.run.execute``, ``run.front``, ``run.importer``: :func:`cache_figures`), and
the analysed all-pairs matrices' cache beside it, so a report right after a run finds both.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from assay.analysis.stats import Folded, Folder, fold_samples
from assay.errors import AssayError
from assay.store import LoadedRun
from assay.store.cache import (
    line_starts,
    lines_at,
    lines_with_offsets,
    read_cache,
    stamp,
    write_cache,
)

CACHE_NAME = "figures.cache.json"
# Bump when the fold or a figure's stored form changes: a cache of another version is remade.
CACHE_VERSION = 2  # 2: the all-pairs matrix files (Folded.matrices)


def folded_of(run: LoadedRun) -> Folded:
    """The run's folded figures. A run loaded with its samples folds those (in memory)."""
    if run.samples:
        return fold_samples(run.samples)
    samples = run.path / "samples.jsonl"
    made_from = stamp(samples)
    cached = read_cache(run.path / CACHE_NAME, CACHE_VERSION, made_from)
    if cached is not None:
        try:
            return Folded.from_dict(cached)
        except (KeyError, TypeError, ValueError):
            pass  # damaged: fold again below, and rewrite it
    folded = fold_file(samples, workers=len(os.sched_getaffinity(0)))  # the CPUs we may use
    if made_from is not None and stamp(samples) == made_from:  # not appended to meanwhile
        write_cache(run.path / CACHE_NAME, CACHE_VERSION, made_from, folded.to_dict())
    return folded


def cache_figures(run_dir: Path) -> None:
    """Fold a finished run's samples and cache them, and analyse its all-pairs matrices into
    their cache (``assay.figures.allpairs``), so its first report is fast too. Never an
    error: a run's records are complete without them, and a report remakes them (and says
    what stopped them)."""
    samples = run_dir / "samples.jsonl"
    made_from = stamp(samples)
    if made_from is None:
        return
    data = read_cache(run_dir / CACHE_NAME, CACHE_VERSION, made_from)
    try:
        folded = Folded.from_dict(data) if data is not None else fold_file(samples)
    except (OSError, ValueError, KeyError, TypeError):
        return
    if data is None and stamp(samples) == made_from:
        write_cache(run_dir / CACHE_NAME, CACHE_VERSION, made_from, folded.to_dict())
    if folded.matrices:
        _cache_matrices(run_dir, folded)


def _cache_matrices(run_dir: Path, folded: Folded) -> None:
    """The all-pairs matrices analysed with the rule the report will use (the config's
    ``[outliers]``), one at a time in this process: the run's end may have threads (no fork),
    and one 10,000-node matrix at a time holds a few hundred MB."""
    # the matrices' analysis and the config: only for a run that has matrices
    from assay.analysis.outliers import outlier_rule
    from assay.config import load_config
    from assay.figures.allpairs import file_matrices

    try:
        rule = outlier_rule(load_config())
    except AssayError:
        return  # the report says what is wrong with the config
    with contextlib.suppress(AssayError, OSError, ValueError, MemoryError):
        file_matrices(run_dir, folded, rule, workers=1)


PART_BYTES = 16 * 2**20  # a part at least this big (~0.25 s of decoding): a fork costs more


def fold_file(path: Path, workers: int = 1) -> Folded:
    """Fold a ``samples.jsonl`` read line by line. Lines that are not sample records (damaged
    JSON, a missing field) are skipped, as loading the run skips a line it cannot parse.

    ``workers`` > 1 folds a large file in that many parts at once, each in a forked process
    (the decoding is the cost, and it is per line), then merges them in file order: the same
    figures as one pass. Only from a single-threaded process (the report command): a fork
    copies one thread, and a lock another one held would stay locked in the child."""
    parts = min(workers, max(1, path.stat().st_size // PART_BYTES)) if path.exists() else 1
    if parts <= 1:
        folder = fold_part(path, 0, None)
    else:
        cuts = line_starts(path, parts)
        with ProcessPoolExecutor(len(cuts) - 1, mp_context=get_context("fork")) as pool:
            folders = list(pool.map(fold_part, itertools.repeat(path), cuts[:-1], cuts[1:]))
        folder = folders[0]
        for later in folders[1:]:
            folder.merge(later)
    medians = {o: json.loads(line) for o, line in lines_at(path, folder.median_refs()).items()}
    return folder.finish(medians)


def fold_part(path: Path, start: int, end: int | None) -> Folder:
    """One pass over the lines from ``start`` to ``end``: each sample's value and place."""
    folder = Folder()
    decode = json.JSONDecoder().raw_decode  # json.loads less its per-call checks: ~30 % faster
    for offset, line in lines_with_offsets(path, start, end):
        try:
            text = line.decode().strip()
            record, stop = decode(text)
            if stop != len(text):  # more after the object: not one record (json.loads says so)
                raise ValueError("extra data")
            folder.add(offset, record)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return folder
