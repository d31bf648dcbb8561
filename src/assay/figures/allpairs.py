"""A run's all-pairs matrices for its report: read from the probe's files in the job
directories (``assay.parsers.allpairs_file``, the format's one reader), one metric at a time,
each analysed (``assay.analysis.matrix.allpairs.analyse``) and dropped before the next is read, so a
10,000-node run's report holds one 200 MB link array at a time (two while a resume's file is
merged into its sweep).

Each MPI's matrix is its sweep together with the jobs that continue it
(``assay.figures.allpairs_jobs``): the resume jobs' pairs fill the sweep's links not measured
(their nodes matched by host name: a resume runs without the node the sweep lost, which is
named with the pairs it was never measured in); the retest jobs' measurements (and retest
rounds in any file) confirm or not what the sweep flags. Several sweeps of one MPI
(``--repeat``) fold into one matrix, each link the median of its sweeps; the sweeps confirm
when there is no retest. Links whose latency is below the network floor are shared memory, not
links (``assay.analysis.derived.shared_memory``), in both metrics. The run's switch tree, when it
recorded one, is ``slurm/topology.txt`` (``scontrol show topology``) or
``slurm/topology.conf``.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from assay.analysis.derived.shared_memory import NETWORK_FLOOR_S
from assay.analysis.matrix.allpairs import METRICS, PairMatrix, analyse
from assay.analysis.matrix.linkmatrix import LinkMatrix, Lost, Retests, fold_sweeps
from assay.analysis.statistics.outliers import OutlierRule
from assay.analysis.statistics.stats import Folded
from assay.condensed import link_index, link_nodes
from assay.errors import ProbeError, StoreError
from assay.figures.allpairs_cache import cached, save
from assay.figures.allpairs_jobs import MatrixJob, SweepJobs, matrix_jobs, sweeps_by_mpi
from assay.inputfile import read_side
from assay.parsers.allpairs_file import COLUMN, MatrixFile, read_matrix_file
from assay.system.topology import (
    Topology,
    TopologyError,
    parse_show_topology,
    parse_topology_conf,
)

TOPOLOGY_FILES = ("slurm/topology.txt", "slurm/topology.conf")


def run_topology(run_dir: Path) -> Topology | None:
    """The switch tree the run recorded, or None; a file that cannot be read is an error
    naming it (exit status 2)."""
    for name in TOPOLOGY_FILES:
        path = run_dir / name
        if not path.exists():
            continue
        try:  # bounded: a link to /dev/zero must not be read until memory runs out
            text = read_side(path, "topology").decode()
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise TopologyError(f"cannot read the run's topology {path}: {exc}") from None
        if name.endswith(".txt"):
            return parse_show_topology(text, f"the run's {name}")
        return parse_topology_conf(text, f"the run's {name}")
    return None


def _distinct(hosts: list[str]) -> list[str]:
    """Host names as the report's labels: ranks on one machine share a host name (test runs),
    so a name found twice gets its rank (``host#3``)."""
    if len(set(hosts)) == len(hosts):
        return hosts
    return [f"{h}#{i}" for i, h in enumerate(hosts)]


def _read(run_dir: Path, job: MatrixJob, metric: str | None) -> MatrixFile:
    """A job's file: ``metric``'s matrix and the links below the network floor; None: its
    retest records only (a retest job's file holds no sweep: no 200 MB array of NaN)."""
    path = run_dir / job.rel
    if not path.is_file():
        raise StoreError(
            f"the run's samples name the all-pairs file {job.rel}, which is not in {run_dir}",
            hint="was the run directory copied without its jobs/ folder?",
        )
    try:
        if metric is None:
            return read_matrix_file(path, metrics=[])
        return read_matrix_file(path, metrics=[metric], latency_below=NETWORK_FLOOR_S)
    except ProbeError as exc:
        raise StoreError(str(exc)) from None


def _onto(sweep: MatrixFile, other: MatrixFile, job: MatrixJob) -> np.ndarray:
    """Each node of a follow-up's file as its index in the sweep's (by host name: a resume
    runs on fewer nodes than its sweep)."""
    if other.hosts == sweep.hosts:
        return np.arange(sweep.n)
    index = {h: i for i, h in enumerate(sweep.hosts)}
    if len(index) != sweep.n or len(set(other.hosts)) != other.n:
        raise StoreError(
            f"the {job.kind} job {job.job or job.rel} ran on other nodes than its sweep, and "
            "their host names repeat: its pairs cannot be matched to the sweep's"
        )
    foreign = [h for h in other.hosts if h not in index]
    if foreign:
        raise StoreError(
            f"the {job.kind} job {job.job or job.rel} names nodes its sweep did not: "
            + ", ".join(foreign[:5])
        )
    return np.array([index[h] for h in other.hosts], np.int64)


def _mapped(n: int, to: np.ndarray, k: np.ndarray, other_n: int) -> np.ndarray:
    """Condensed indices of a follow-up's file (``other_n`` nodes) in the sweep's layout."""
    if other_n == n and bool((to == np.arange(n)).all()):
        return k
    i, j = link_nodes(other_n, k)
    return np.asarray(link_index(n, to[i], to[j]), np.int64)


class _Retests:
    """Retest measurements gathered from several files, each file's rounds numbered after the
    previous file's (a node's retest is one per round: two files' round 1 are two rounds)."""

    def __init__(self) -> None:
        self.links: list[np.ndarray] = []
        self.values: list[np.ndarray] = []
        self.rounds: list[np.ndarray] = []
        self.offset = 0

    def add(self, f: MatrixFile, metric: str, n: int, to: np.ndarray) -> None:
        rec = f.retests
        if not len(rec):
            return
        k = link_index(f.n, rec["a"], rec["b"])
        self.links.append(_mapped(n, to, np.asarray(k, np.int64), f.n))
        self.values.append(rec[COLUMN[metric]].astype(np.float32))
        self.rounds.append(rec["round"].astype(np.int32) + self.offset)
        self.offset += int(rec["round"].max()) + 1

    def get(self) -> Retests:
        if not self.links:
            return Retests.none()
        cat = np.concatenate
        return Retests(cat(self.links), cat(self.values), cat(self.rounds))


def _sweep(run_dir: Path, s: SweepJobs, metric: str, mpi: str, retests: _Retests) -> LinkMatrix:
    """One sweep's matrix: its resumes' pairs fill its gaps, its retests gathered."""
    f = _read(run_dir, s.sweep, metric)
    n, values = f.n, f.column(metric)
    notes = [f.note] if f.note else []
    shared, lost = [f.below], []
    concurrent = f.concurrent
    retests.add(f, metric, n, np.arange(n))
    for job in s.resumes:
        r = _read(run_dir, job, metric)
        to = _onto(f, r, job)
        got = np.flatnonzero(~np.isnan(r.column(metric)))
        k = _mapped(n, to, got, r.n)
        gap = np.isnan(values[k])  # a resume fills what the sweep did not measure
        values[k[gap]] = r.column(metric)[got[gap]]
        shared.append(_mapped(n, to, r.below, r.n))
        lost += [Lost(i, job.job or job.rel) for i in np.setdiff1d(np.arange(n), to).tolist()]
        notes += [r.note] if r.note else []
        concurrent = max(concurrent, r.concurrent)
        retests.add(r, metric, n, to)
        del r
    for job in s.retests:
        t = _read(run_dir, job, None)
        retests.add(t, metric, n, _onto(f, t, job))
        notes += [t.note] if t.note else []
    lm = LinkMatrix(f.hosts, metric, "lower" if metric == "p2p.latency" else "higher",
                    f.size(metric), mpi, values, concurrent=concurrent, notes=notes)  # fmt: skip
    lm.shared = np.unique(np.concatenate(shared))
    lm.lost = list({x.node: x for x in lost}.values())
    return lm


def _one(
    run_dir: Path, sweeps: list[SweepJobs], metric: str, mpi: str
) -> tuple[LinkMatrix, list[np.ndarray] | None]:
    """The metric of one MPI's sweeps (with their follow-ups) as one matrix, and the sweeps it
    was folded from (None: one, or retests to confirm by)."""
    retests = _Retests()
    done: list[LinkMatrix] = []
    for s in sweeps:
        lm = _sweep(run_dir, s, metric, mpi, retests)
        if done and lm.hosts != done[0].hosts:
            raise StoreError(f"the all-pairs sweeps of {mpi} ({s.sweep.rel} and others) name "
                             "different nodes")  # fmt: skip
        done.append(lm)
    first = done[0]
    if len(done) == 1:
        out, folded_from = first, None
    else:
        values, reps, spread = fold_sweeps([lm.values for lm in done])
        out = replace(
            first, values=values, repetitions=reps, spread=spread,
            concurrent=max(lm.concurrent for lm in done),
            notes=[note for lm in done for note in lm.notes],
            shared=np.unique(np.concatenate([lm.shared for lm in done])),
            lost=[x for lm in done for x in lm.lost],
        )  # fmt: skip
        folded_from = [lm.values for lm in done]
    out.hosts = _distinct(out.hosts)
    out.retests = retests.get()
    if len(out.retests):
        return out, None
    return out, folded_from  # no retest rounds: the sweeps confirm (analyse)


def file_matrices(
    run_dir: Path, folded: Folded, rule: OutlierRule, workers: int | None = None
) -> tuple[list[PairMatrix], list[str]]:
    """Every all-pairs matrix of the run's probe files, analysed one at a time; and what could
    not be shown (a file missing or damaged, a follow-up without its sweep, a topology that
    cannot be read or does not fit the run), each said in words: the rest of the report
    stands. Cached beside the run (``assay.figures.allpairs_cache``): only the first report
    reads the links. ``workers``: matrices analysed at once (default ``WORKERS``; 1 from a
    process that may have threads, where forking is not safe)."""
    jobs = matrix_jobs(folded)
    if not jobs:
        return [], []
    sources = [j.rel for j in jobs] + [t for t in TOPOLOGY_FILES if (run_dir / t).exists()]
    hit = cached(run_dir, sources, rule)
    if hit is not None:
        return hit
    by_mpi, problems = sweeps_by_mpi(jobs)
    matrices, said = _analysed(run_dir, by_mpi, rule, WORKERS if workers is None else workers)
    save(run_dir, sources, rule, matrices, problems + said)
    return matrices, problems + said


WORKERS = 2  # matrices analysed at once (each holds its links: 200 MB at 10,000 nodes)


def _analysed(
    run_dir: Path, by_mpi: dict[str, list[SweepJobs]], rule: OutlierRule, workers: int
) -> tuple[list[PairMatrix], list[str]]:
    """Each matrix (MPI × metric) read and analysed; with several, more than one worker and
    more than one usable core, in forked worker processes, that many at a time (from the
    report command only, which is single-threaded, as ``assay.figures.folded.fold_file``
    forks)."""
    problems = []
    try:
        topology = run_topology(run_dir)
    except TopologyError as exc:
        topology = None
        problems.append(f"No per-switch figures: {exc}")
    tasks = [
        (run_dir, sweeps, metric, mpi, rule, topology)
        for mpi, sweeps in by_mpi.items()
        for metric in METRICS
    ]
    workers = min(len(tasks), len(os.sched_getaffinity(0)), workers)
    if workers > 1:
        with ProcessPoolExecutor(workers, mp_context=get_context("fork")) as pool:
            done = list(pool.map(_analyse_one, *zip(*tasks, strict=True)))
    else:
        done = [_analyse_one(*task) for task in tasks]
    out = [m for m, _ in done if m is not None]
    return out, problems + [p for _, said in done for p in said]


def _analyse_one(
    run_dir: Path,
    sweeps: list[SweepJobs],
    metric: str,
    mpi: str,
    rule: OutlierRule,
    topology: Topology | None,
) -> tuple[PairMatrix | None, list[str]]:
    """One matrix read and analysed (its links freed on return); what could not be shown."""
    try:
        lm, folded_from = _one(run_dir, sweeps, metric, mpi)
    except StoreError as exc:
        return None, [f"{metric} ({mpi}) not shown: {exc}"]
    said = []
    try:
        pm = analyse(lm, rule, topology=topology, sweeps=folded_from)
    except TopologyError as exc:
        said.append(f"No per-switch figures for {metric} ({mpi}): {exc}")
        pm = analyse(lm, rule, sweeps=folded_from)
    pm.files = [rel for s in sweeps for rel in s.files]
    return pm, said
