"""The order of a report's sections, and the tables no family claims.

``build`` takes a run's folded figures (``assay.figures.folded``), runs the derive step once
(:func:`assay.analysis.derived.derive.derive`) and hands each family its figures: system, memory,
compute, MPI, storage, the Hockney model and latency distributions, RDMA, then every figure no
family showed ("Other measurements") and the jobs that failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from assay.analysis.derived.derive import Derived, derive, p2p_method
from assay.analysis.derived.shared_memory import not_links
from assay.analysis.matrix.allpairs import PairMatrix
from assay.analysis.matrix.perpair import matrices
from assay.analysis.statistics.outliers import OutlierRule
from assay.analysis.statistics.stats import Figure, Folded, fold_samples
from assay.model import JobResult, Sample
from assay.report.allpairs import allpairs_tables, pernode_tables
from assay.report.compute import compute_figures, compute_table
from assay.report.distribution import latency_stats_tables
from assay.report.gpu import gpu_figures, gpu_tables
from assay.report.memory import (
    TABLE_METRICS,
    domain_figures,
    domain_tables,
    stream_commands,
    stream_figures,
    stream_table,
)
from assay.report.mpi import (
    collective_tables,
    hockney_table,
    p2p_tables,
    shared_memory_table,
)
from assay.report.nccl import nccl_figures, nccl_tables
from assay.report.rdma import rdma_figures, rdma_tables
from assay.report.storage import storage_figures, storage_tables
from assay.report.system import system_table
from assay.report.table import (
    Table,
    commands_of_jobs,
    count,
    spread_column,
)
from assay.store import LoadedRun
from assay.units import format_value, metric_info
from assay.vocab import COLL_METHOD

P2P_TABLE_METRICS = ("p2p.latency", "p2p.bandwidth", "p2p.bibw")


def generic_table(figures: list[Figure], shown: set[int]) -> Table | None:
    """Every figure no dedicated table shows, so nothing measured is left out of a report."""
    rest = [f for f in figures if id(f) not in shown]
    if not rest:
        return None
    rest.sort(key=lambda f: (f.sample.metric, str(f.sample.params)))
    spreads, spread_words = spread_column(rest)
    rows = []
    for f, spread in zip(rest, spreads, strict=True):
        info = metric_info(f.sample.metric)
        unit = info.display if f.sample.unit == info.unit else f.sample.unit
        value = (
            format_value(f.sample.value, unit)
            if f.sample.unit == info.unit
            else f"{f.sample.value:g}"
        )
        params = ", ".join(
            f"{k}={v}" for k, v in sorted(f.sample.params.items()) if not isinstance(v, list | dict)
        )
        rows.append([f.sample.metric, params, value, unit, count(f), spread])
    cols = ["metric", "params", "value", "unit", "n", "spread"]
    return Table("other", "Other measurements", cols, rows, [spread_words] if spread_words else [])


def failures_table(results: list[JobResult]) -> Table | None:
    failed = [r for r in results if r.status != "ok"]
    if not failed:
        return None
    rows = [[r.job_id, r.status, r.reason.splitlines()[0] if r.reason else ""] for r in failed]
    notes = [f"Full stderr of each: {r.stderr_path}" for r in failed]
    return Table(
        "failures", "Jobs that failed or were skipped", ["job", "status", "reason"], rows, notes
    )


@dataclass
class Built:
    """A run's report before drawing: its tables, and the figures and derived figures they
    came from (the plots are drawn from the same, so a plot agrees with its table)."""

    tables: list[Table]
    figures: list[Figure]
    derived: Derived
    matrices: list[PairMatrix]  # the all-pairs matrices (their tables and heatmaps)


def _relabels(samples: list[Sample], runs: list[LoadedRun], first: str) -> list[dict[str, str]]:
    """For samples of several runs (``samples[i]`` from ``runs[i]``), the params that keep
    two runs' figures apart: a series (MPI or import label) found in more than one run gets
    the run's label (or id) appended; other figures of runs after the ``first`` (its run id)
    get a ``run`` param."""
    from assay.analysis.derived.series import series_label

    def name(run: LoadedRun) -> str:
        return run.info.label or run.info.run_id

    def has_series(s: Sample) -> bool:
        return bool(s.params.get("mpi") or s.params.get("mpi_label"))

    series_runs: dict[str, set[str]] = {}
    for s, run in zip(samples, runs, strict=True):
        if has_series(s):
            series_runs.setdefault(series_label(s), set()).add(run.info.run_id)
    out: list[dict[str, str]] = []
    for s, run in zip(samples, runs, strict=True):
        label = series_label(s) if has_series(s) else ""
        if label and len(series_runs[label]) > 1:
            out.append({"mpi_label": f"{label} ({name(run)})"})
        elif not label and run.info.run_id != first:
            out.append({"run": name(run)})
        else:
            out.append({})
    return out


def merge_samples(runs: list[LoadedRun]) -> LoadedRun:
    """Several runs' samples as one run's (for the JSON and CSV reports), relabelled as
    :func:`_relabels` says; the first run gives the system record and the run info."""
    if len(runs) == 1:
        return runs[0]
    from dataclasses import replace

    pairs = [(s, run) for run in runs for s in run.samples]
    extra = _relabels([s for s, _ in pairs], [r for _, r in pairs], runs[0].info.run_id)
    samples = [
        replace(s, params={**s.params, **more}) for (s, _), more in zip(pairs, extra, strict=True)
    ]
    damage = {k: d for run in runs for k, d in run.damage.items()}
    results = [r for run in runs for r in run.results]
    return replace(runs[0], samples=samples, results=results, damage=damage)


def merge_runs(runs: list[tuple[LoadedRun, Folded]]) -> tuple[LoadedRun, Folded]:
    """Several runs as one, for one report: an imported OSU output stands as a column beside
    the MPIs assay ran (figures relabelled as :func:`_relabels` says). The first run gives
    the system record and the header's run info."""
    if len(runs) == 1:
        return runs[0]
    from dataclasses import replace

    first = runs[0][0]

    def merged(pick: Callable[[Folded], list[Figure]]) -> list[Figure]:
        figs = [(f, run) for run, folded in runs for f in pick(folded)]
        extra = _relabels([f.sample for f, _ in figs], [r for _, r in figs], first.info.run_id)
        out = []
        for (f, _), more in zip(figs, extra, strict=True):
            sample = replace(f.sample, params={**f.sample.params, **more})
            median = f.median and replace(f.median, params={**f.median.params, **more})
            out.append(replace(f, sample=sample, median=median))
        return out

    results = [r for run, _ in runs for r in run.results]
    folded = Folded(
        merged(lambda f: f.figures),
        merged(lambda f: f.by_host),
        sum(f.n_samples for _, f in runs),
    )
    return replace(first, results=results), folded


def build_tables(run: LoadedRun) -> list[Table]:
    return build(run).tables


def build(
    run: LoadedRun,
    folded: Folded | None = None,
    rule: OutlierRule | None = None,
    file_matrices: list[PairMatrix] | None = None,
    matrix_problems: list[str] | None = None,
) -> Built:
    """The report's tables; ``folded`` defaults to the run's samples folded in memory;
    ``rule`` says which links and nodes are outliers (the default rule when None);
    ``file_matrices``: the all-pairs matrices read from the probe's files
    (``assay.figures.allpairs``), beside those of per-pair samples; ``matrix_problems``: what
    of them could not be shown, and why."""
    folded = folded or fold_samples(run.samples)
    figures = folded.figures
    # All-pairs figures have their own tables (below); no per-pair Hockney fits.
    derived = derive(
        [f for f in figures if f.sample.params.get("placement") != "all-pairs"], run.system
    )
    hosts = sorted({h for r in run.results for h in r.hosts})
    tables = [system_table(run.system, hosts)]
    shown: set[int] = set()

    stream_figs = stream_figures(figures)
    stream = stream_table(stream_figs)
    if stream:
        stream.commands = stream_commands(run.results)
        # % of the DRAM bandwidth, or why not: once per distinct line (one per run otherwise)
        stream.notes += list(dict.fromkeys(derived.why_lines(stream_figs)))
        tables.append(stream)
        shown |= {id(f) for f in stream_figs}
    # The node-wide STREAM figures go in too: the domain summary quotes the node's Triad
    # ("Triad 260 GB/s (32–33 GB/s per CCX)"); they are already shown above.
    domain_figs = domain_figures(figures)
    for table in domain_tables(domain_figs, run.system, run.results, derived.domains):
        tables.append(table)
        shown |= {id(f) for f in domain_figs if f.sample.metric in TABLE_METRICS[table.key]}

    compute_figs = compute_figures(figures)
    compute = compute_table(compute_figs, derived)
    if compute:
        tables.append(compute)
        shown |= {id(f) for f in compute_figs}

    # All-pairs (Slurm): N x N matrices from the figures folded per host (folding by the
    # measurement alone merges pairs that differ only in their hosts), not the two-node tables.
    # The all-pairs probe's own figures (its matrix's median link, each node's) stand for their
    # matrix: shown as figures only where the matrix itself could not be.
    read = {rel for m in file_matrices or [] for rel in m.files}
    all_pairs = [
        f
        for f in figures
        if ("matrix" not in f.sample.params and f.sample.params.get("placement") == "all-pairs")
        or f.sample.params.get("matrix") in read
    ]
    rule = rule or OutlierRule()
    pair_matrices = matrices(folded.by_host, rule) + (file_matrices or [])
    tables += allpairs_tables(pair_matrices, matrix_problems or [])
    tables += pernode_tables(folded.by_host, rule)
    shown |= {id(f) for f in all_pairs}
    # a two-node series through shared memory is not a link: named apart, in no link table
    not_a_link = not_links(figures, derived.shared_memory)
    shown |= not_a_link
    p2p_figs = [f for f in p2p_method(figures) if id(f) not in shown]
    p2p = p2p_tables(p2p_figs)
    for t in p2p:
        if t.key == "p2p-bandwidth":  # % of the link rate between hosts, shared memory
            t.notes += derived.why_lines(
                [f for f in p2p_figs if f.sample.metric == "p2p.bandwidth"]
            )
        metrics = {"p2p-latency": "p2p.latency"}
        if t.key in metrics:
            jobs = {f.sample.job_id for f in p2p_figs if f.sample.metric == metrics[t.key]}
            t.commands = commands_of_jobs(run.results, jobs)
    tables += p2p
    shm = shared_memory_table(derived.shared_memory)
    tables += [shm] if shm else []
    shown |= {id(f) for f in p2p_figs if f.sample.metric in P2P_TABLE_METRICS}

    coll_figs = [
        f
        for f in figures
        if f.sample.probe in COLL_METHOD
        and f.sample.metric.startswith("coll.")
        and "size" in f.sample.params
    ]
    tables += collective_tables(coll_figs, run.results)
    shown |= {id(f) for f in coll_figs}

    tables += storage_tables(figures, derived.storage_points, derived.knees)
    shown |= {id(f) for f in storage_figures(figures)}

    model = hockney_table(derived)
    if model:
        tables.append(model)
    tables += latency_stats_tables(p2p_figs)

    rdma_figs = rdma_figures(figures)
    tables += rdma_tables(rdma_figs)
    shown |= {id(f) for f in rdma_figs}

    gpu_figs = gpu_figures(figures)
    tables += gpu_tables(gpu_figs)
    shown |= {id(f) for f in gpu_figs}
    nccl_figs = nccl_figures(figures)
    tables += nccl_tables(nccl_figs)
    shown |= {id(f) for f in nccl_figs}
    other = generic_table(figures, shown)
    if other:
        tables.append(other)
    failures = failures_table(run.results)
    if failures:
        tables.append(failures)
    return Built(tables, figures, derived, pair_matrices)
