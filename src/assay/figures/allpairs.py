"""A run's all-pairs matrices for its report: read from the probe's files in the job
directories (one ``allpairs.bin`` per MPI and sweep), one metric at a time, each analysed
(``assay.analysis.allpairs.analyse``) and dropped before the next is read, so a 10,000-node
run's report holds one 200 MB link array at a time.

The samples say where the files are: the all-pairs probe's per-node samples carry ``matrix``
(the file, relative to the run directory) and ``node``; several files of one MPI (``--repeat``)
are folded into one matrix (each link the median of its sweeps, the sweeps its retests when
the files hold no retest round). The run's switch tree, when the run recorded one, is
``slurm/topology.txt`` (``scontrol show topology``) or ``slurm/topology.conf``.
"""

from __future__ import annotations

import os
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from assay.analysis.allpairs import METRICS, PairMatrix, analyse
from assay.analysis.linkmatrix import LinkMatrix, Retests, fold_sweeps
from assay.analysis.outliers import OutlierRule
from assay.analysis.stats import Folded
from assay.errors import StoreError
from assay.figures.allpairs_cache import cached, save
from assay.store import LoadedRun
from assay.store.allpairs_file import Column, read_column
from assay.system.topology import (
    Topology,
    TopologyError,
    parse_show_topology,
    parse_topology_conf,
)

TOPOLOGY_FILES = ("slurm/topology.txt", "slurm/topology.conf")


def matrix_files(folded: Folded) -> dict[str, list[tuple[str, str]]]:
    """The matrix files the run's samples name (``params.matrix``, relative to the run
    directory) with their job's kind (``params.kind``: sweep, retest or resume), by MPI label,
    in the order first seen."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for f in [*folded.figures, *folded.by_host]:
        p = f.sample.params
        rel = p.get("matrix")
        if isinstance(rel, str) and rel:
            mpi = str(p.get("mpi_label") or p.get("mpi") or "MPI")
            entry = (rel, str(p.get("kind") or "sweep"))
            if entry not in out[mpi]:
                out[mpi].append(entry)
    return dict(out)


def run_topology(run_dir: Path) -> Topology | None:
    """The switch tree the run recorded, or None; a file that cannot be read is an error
    naming it (exit status 2)."""
    for name in TOPOLOGY_FILES:
        path = run_dir / name
        if not path.exists():
            continue
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise TopologyError(f"cannot read the run's topology {path}: {exc}") from None
        if name.endswith(".txt"):
            return parse_show_topology(text, f"the run's {name}")
        return parse_topology_conf(text, f"the run's {name}")
    return None


def link_matrix(col: Column, metric: str, mpi: str) -> LinkMatrix:
    """A file's column as the analysis's matrix."""
    info = col.info
    lat = metric == "p2p.latency"
    retests = Retests(col.retest_links, col.retest_values, col.retest_rounds)
    return LinkMatrix(
        info.hosts,
        metric,
        "lower" if lat else "higher",
        info.lat_size if lat else info.bw_size,
        mpi,
        col.values,
        (1, 1),
        None,
        col.largest_round,
        retests,
        col.notes,
    )


def _distinct(hosts: list[str]) -> list[str]:
    """Host names as the report's labels: ranks on one machine share a host name (test runs),
    so a name found twice gets its rank (``host#3``)."""
    if len(set(hosts)) == len(hosts):
        return hosts
    return [f"{h}#{i}" for i, h in enumerate(hosts)]


def _read(run_dir: Path, rel: str, metric: str, mpi: str) -> LinkMatrix:
    path = run_dir / rel
    if not path.is_file():
        raise StoreError(
            f"the run's samples name the all-pairs file {rel}, which is not in {run_dir}",
            hint="was the run directory copied without its jobs/ folder?",
        )
    return link_matrix(read_column(path, metric), metric, mpi)


def _one(
    run_dir: Path, files: list[tuple[str, str]], metric: str, mpi: str
) -> tuple[LinkMatrix, list[np.ndarray] | None]:
    """The metric of one MPI's files as one matrix, and the sweeps it was folded from (None:
    one). Each sweep file (``--repeat``: several, each link the median of its sweeps) takes the
    resume files that follow it (the pairs left after a lost node: filling its gaps); the
    retest files (and retest rounds in any file) give the retests."""
    sweeps: list[LinkMatrix] = []
    retests: list[Retests] = []
    for rel, kind in files:
        lm = _read(run_dir, rel, metric, mpi)
        if sweeps and lm.hosts != sweeps[0].hosts:
            raise StoreError(
                f"the all-pairs files of {mpi} ({rel} and others) name different nodes"
            )
        if len(lm.retests):
            retests.append(lm.retests)
        if kind == "retest":
            continue
        if kind == "resume" and sweeps:
            last = sweeps[-1]
            gaps = np.isnan(last.values)
            last.values[gaps] = lm.values[gaps]
            last.notes += lm.notes
            continue
        sweeps.append(lm)
    if not sweeps:
        raise StoreError(f"the all-pairs files of {mpi} hold retests but no sweep")
    first = sweeps[0]
    if len(sweeps) == 1:
        out, folded_from = first, None
    else:
        values, reps, spread = fold_sweeps([lm.values for lm in sweeps])
        notes = [n for lm in sweeps for n in lm.notes]
        out = replace(first, values=values, repetitions=reps, spread=spread, notes=notes)
        folded_from = [lm.values for lm in sweeps]
    out.hosts = _distinct(out.hosts)
    if retests:
        out.retests = Retests(
            np.concatenate([r.links for r in retests]),
            np.concatenate([r.values for r in retests]),
            np.concatenate([r.rounds for r in retests]),
        )
        return out, None
    return out, folded_from  # no retest rounds: the sweeps confirm (analyse)


def file_matrices(
    run: LoadedRun, folded: Folded, rule: OutlierRule
) -> tuple[list[PairMatrix], list[str]]:
    """Every all-pairs matrix of the run's probe files, analysed one at a time; and what could
    not be shown (a file missing or damaged, a topology that cannot be read or does not fit
    the run), each said in words: the rest of the report stands. Cached beside the run
    (``assay.figures.allpairs_cache``): only the first report reads the links."""
    files = matrix_files(folded)
    if not files:
        return [], []
    sources = [rel for entries in files.values() for rel, _ in entries]
    sources += [t for t in TOPOLOGY_FILES if (run.path / t).exists()]
    hit = cached(run.path, sources, rule)
    if hit is not None:
        return hit
    matrices, problems = _analysed(run, files, rule)
    save(run.path, sources, rule, matrices, problems)
    return matrices, problems


WORKERS = 2  # matrices analysed at once (each holds its links: 200 MB at 10,000 nodes)


def _analysed(
    run: LoadedRun, files: dict[str, list[tuple[str, str]]], rule: OutlierRule
) -> tuple[list[PairMatrix], list[str]]:
    """Each matrix (MPI × metric) read and analysed; with several and more than one usable
    core, in forked worker processes, ``WORKERS`` at a time (from the report command only,
    which is single-threaded, as ``assay.figures.folded.fold_file`` forks)."""
    problems = []
    try:
        topology = run_topology(run.path)
    except TopologyError as exc:
        topology = None
        problems.append(f"No per-switch figures: {exc}")
    tasks = [
        (run.path, rels, metric, mpi, rule, topology)
        for mpi, rels in files.items()
        for metric in METRICS
    ]
    workers = min(len(tasks), len(os.sched_getaffinity(0)), WORKERS)
    if workers > 1:
        with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
            done = list(pool.map(_analyse_one, *zip(*tasks, strict=True)))
    else:
        done = [_analyse_one(*task) for task in tasks]
    out = [m for m, _ in done if m is not None]
    return out, problems + [p for _, said in done for p in said]


def _analyse_one(
    run_dir: Path,
    rels: list[tuple[str, str]],
    metric: str,
    mpi: str,
    rule: OutlierRule,
    topology: Topology | None,
) -> tuple[PairMatrix | None, list[str]]:
    """One matrix read and analysed (its links freed on return); what could not be shown."""
    try:
        lm, sweeps = _one(run_dir, rels, metric, mpi)
    except StoreError as exc:
        return None, [f"{metric} ({mpi}) not shown: {exc}"]
    try:
        return analyse(lm, rule, topology, sweeps=sweeps), []
    except TopologyError as exc:
        said = f"No per-switch figures for {metric} ({mpi}): {exc}"
        return analyse(lm, rule, None, sweeps=sweeps), [said]
