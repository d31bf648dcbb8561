"""A run's figures for its report: from the cache beside its records, else folded from its
stored sample lines in one pass (``assay.analysis.statistics.stats.Folder``) and cached.

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
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from assay.analysis.statistics.stats import Figure, Folded, Folder, fold_samples
from assay.errors import AssayError
from assay.store import LoadedRun
from assay.store.cache import (
    Stamp,
    line_starts,
    lines_at,
    lines_with_offsets,
    read_cache,
    size_of,
    stamp,
    write_cache_parts,
)
from assay.store.lines import text_lines
from assay.store.records import SAMPLES, Damage, scan

_T = TypeVar("_T")

CACHE_NAME = "figures.cache.json"
# Bump when the fold or a figure's stored form changes: a cache of another version is remade.
# 2: the cache names its source by content digest, carries a checksum and the damaged lines,
# and the all-pairs matrix files the samples name (Folded.matrices). 3: folded from params under
# today's names (``model.current_params``: NCCL's ``buffers``).
CACHE_VERSION = 3


def folded_of(run: LoadedRun) -> Folded:
    """The run's folded figures. A run loaded with its samples folds those (in memory).
    Damaged sample lines (skipped, by the rule of ``assay.store.records``) are noted in
    ``run.damage``, whether found now or by the fold the cache was made from."""
    if run.samples:
        return fold_samples(run.samples)
    samples = run.path / SAMPLES
    cached = read_cache(run.path / CACHE_NAME, CACHE_VERSION, samples)
    if cached is not None and cached.payload is not None:
        try:
            folded = Folded.from_dict(cached.payload)
            damage = Damage.from_dict(cached.extra["damage"])
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # damaged: fold again below, and rewrite it
        else:
            run.saw(damage)
            return folded
    made_from = stamp(samples)
    damage = Damage(SAMPLES)
    folded = fold_file(samples, workers=len(os.sched_getaffinity(0)), damage=damage)  # our CPUs
    run.saw(damage)
    _keep(run.path, made_from, folded, damage)
    return folded


def _keep(run_dir: Path, made_from: Stamp | None, folded: Folded, damage: Damage) -> None:
    """Cache what was folded, unless the file was appended to meanwhile."""
    if made_from is not None and size_of(run_dir / SAMPLES) == made_from.size:
        extra = {"damage": damage.to_dict()}
        parts = _payload_parts(folded.n_samples, iter(folded.figures), iter(folded.by_host),
                               folded.matrices)  # fmt: skip
        write_cache_parts(run_dir / CACHE_NAME, CACHE_VERSION, made_from, parts, extra)


def cache_figures(run_dir: Path) -> None:
    """Fold a finished run's samples and cache them, and analyse its all-pairs matrices into
    their cache (``assay.figures.allpairs``), so its first report is fast too. Never an
    error: a run's records are complete without them, and a report remakes them (and says
    what stopped them)."""
    samples = run_dir / SAMPLES
    cached = read_cache(run_dir / CACHE_NAME, CACHE_VERSION, samples)
    folded = None
    if cached is not None and cached.payload is not None:
        with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):
            folded = Folded.from_dict(cached.payload)
    if folded is None:
        folded = _fold_and_keep(run_dir)
    if folded is not None and folded.matrices:
        _cache_matrices(run_dir, folded)


def _fold_and_keep(run_dir: Path) -> Folded | None:
    """Fold the samples into the cache one batch of figures at a time, never all of them at
    once (a run of 250,000 one-row figures held them, their dicts and their text together:
    a gigabyte); what is returned has the matrices and count, not the figures. None when the
    samples cannot be read."""
    samples = run_dir / SAMPLES
    made_from = stamp(samples)
    if made_from is None:
        return None
    damage = Damage(SAMPLES)
    try:
        folder = fold_lines(samples, damage=damage)
        if size_of(samples) == made_from.size:  # not appended to meanwhile
            extra = {"damage": damage.to_dict()}
            fetch = fetch_lines(samples)
            parts = _payload_parts(folder.n, folder.figures(fetch), folder.host_figures(fetch),
                                   folder.matrices)  # fmt: skip
            write_cache_parts(run_dir / CACHE_NAME, CACHE_VERSION, made_from, parts, extra)
    except (OSError, ValueError, KeyError, TypeError):  # a line changed since the fold read it
        return None
    return Folded([], [], folder.n, folder.matrices)


def _payload_parts(
    n_samples: int, figures: Iterator[Figure], by_host: Iterator[Figure], matrices: list
) -> Iterator[str]:
    """``Folded.to_dict`` as JSON text, a batch of figures at a time (the figures may be
    made as they are written: ``Folder.figures``)."""
    yield f'{{"n_samples": {n_samples}, "figures": ['
    yield from _joined_json(figures)
    yield '], "by_host": ['
    yield from _joined_json(by_host)
    yield f'], "matrices": {json.dumps(matrices)}}}'


def _joined_json(figures: Iterator[Figure]) -> Iterator[str]:
    for i, batch in enumerate(_batched(figures, 4096)):
        yield (", " if i else "") + ", ".join(json.dumps(f.to_dict()) for f in batch)


def _cache_matrices(run_dir: Path, folded: Folded) -> None:
    """The all-pairs matrices analysed with the rule the report will use (the config's
    ``[outliers]``), one at a time in this process: the run's end may have threads (no fork),
    and one 10,000-node matrix at a time holds a few hundred MB."""
    # the matrices' analysis and the config: only for a run that has matrices
    from assay.analysis.statistics.outliers import outlier_rule
    from assay.config import read_config
    from assay.figures.allpairs import file_matrices

    try:
        rule = outlier_rule(read_config())
    except AssayError:
        return  # the report says what is wrong with the config
    with contextlib.suppress(AssayError, OSError, ValueError, MemoryError):
        file_matrices(run_dir, folded, rule, workers=1)


def sample_lines(run: LoadedRun) -> Iterator[list[str]]:
    """The run's good sample lines as stored (text, no newline), in batches, for passing
    through without re-encoding; damaged lines skipped and noted in ``run.damage``. Which
    lines are damaged comes from the cache while it holds, else from checking every line
    first (on every usable core); then no line is decoded as JSON. The lines are those of the
    file as it was checked (a run still being written gains lines after)."""
    samples = run.path / SAMPLES
    cached = read_cache(run.path / CACHE_NAME, CACHE_VERSION, samples, payload=False)
    known, end = None, 0
    if cached is not None:
        try:
            known = Damage.from_dict(cached.extra["damage"])
            end = cached.made_from_size
        except (KeyError, TypeError, ValueError, AttributeError):
            known = None
    if known is None:
        end = size_of(samples) or 0
        known = Damage(SAMPLES)
        find_damage(samples, workers=len(os.sched_getaffinity(0)), damage=known)
    run.saw(known)
    if known.whole:
        return  # not a file to read (a device): nothing to pass through
    if not known:
        yield from text_lines(samples, end)
        return
    if known.offsets is not None:
        skip = set(known.offsets)
        lines = (line for offset, line in lines_with_offsets(samples, 0, end) if offset not in skip)
    else:  # too many damaged lines to have kept where: checked again, here
        lines = (line for _, line, _ in scan(samples, Damage(SAMPLES), 0, end))
    for batch in _batched(lines, 10_000):
        yield [line.decode().rstrip("\r\n") for line in batch]


def _batched(items: Iterable[_T], n: int) -> Iterator[list[_T]]:
    batch: list[_T] = []
    for item in items:
        batch.append(item)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


PART_BYTES = 16 * 2**20  # a part at least this big (~0.25 s of decoding): a fork costs more


def _in_parts(path: Path, workers: int, part: Callable[[Path, int, int | None], _T]) -> list[_T]:
    """``part(path, start, end)`` over line-aligned parts of the file, in file order: one
    part, or (for a large file and ``workers`` > 1) one per worker, each in a forked process.
    Only from a single-threaded process (the report command): a fork copies one thread, and a
    lock another one held would stay locked in the child."""
    parts = min(workers, max(1, path.stat().st_size // PART_BYTES)) if path.exists() else 1
    if parts <= 1:
        return [part(path, 0, None)]
    from concurrent.futures import ProcessPoolExecutor  # only for files of many parts: 0.06 s
    from multiprocessing import get_context

    cuts = line_starts(path, parts)
    with ProcessPoolExecutor(len(cuts) - 1, mp_context=get_context("fork")) as pool:
        return list(pool.map(part, itertools.repeat(path), cuts[:-1], cuts[1:]))


def _joined(parts: list[tuple[int, Damage]], damage: Damage | None) -> None:
    """The damage of each part (after its count of good lines), numbered from the file's
    first line, added to ``damage``."""
    if damage is None:
        return
    lines = 0
    for good, found in parts:
        damage.extend(found, lines)
        lines += good + found.count


def fold_file(path: Path, workers: int = 1, damage: Damage | None = None) -> Folded:
    """Fold a ``samples.jsonl`` read line by line. Lines that are not sample records (not
    UTF-8 or JSON, a missing field, a value that is not a finite number) are skipped and
    counted in ``damage``, as every reader of the run skips them (``assay.store.records``).

    ``workers`` > 1 folds a large file in that many parts at once (``_in_parts``: the
    decoding is the cost, and it is per line), then merges them in file order: the same
    figures as one pass."""
    return fold_lines(path, workers, damage).finish(fetch_lines(path))


def fold_lines(path: Path, workers: int = 1, damage: Damage | None = None) -> Folder:
    """The fold of ``fold_file`` before its figures are made (``Folder.figures`` makes them
    one batch at a time, fetching the lines they keep with ``fetch_lines``)."""
    results = _in_parts(path, workers, fold_part)
    _joined([(f.n, found) for f, found in results], damage)  # before merge counts them in
    folder = results[0][0]
    for later, _ in results[1:]:
        folder.merge(later)
    return folder


def fetch_lines(path: Path) -> Callable[[list[int]], dict[int, dict]]:
    """The sample records of ``path`` at some offsets (good lines, as ``fold_part`` found)."""
    return lambda offsets: {o: json.loads(line) for o, line in lines_at(path, offsets).items()}


def fold_part(path: Path, start: int, end: int | None) -> tuple[Folder, Damage]:
    """One pass over the lines from ``start`` to ``end``: each good sample's value and place,
    and the damaged lines (numbered from the part's first line)."""
    folder = Folder()
    damage = Damage(path.name)
    for offset, _, record in scan(path, damage, start, end):
        folder.add(offset, record)
    return folder, damage


def find_damage(path: Path, workers: int = 1, damage: Damage | None = None) -> None:
    """Check every line of a record file (in parts, as ``fold_file`` does) and add the
    damaged ones to ``damage``."""
    _joined(_in_parts(path, workers, check_part), damage)


def check_part(path: Path, start: int, end: int | None) -> tuple[int, Damage]:
    """The good lines from ``start`` to ``end``, counted, and the damaged ones."""
    damage = Damage(path.name)
    return sum(1 for _ in scan(path, damage, start, end)), damage
