"""The compute table: Rpeak with its derivation, DGEMM/SGEMM and HPL Rmax with their share.

Every number here beyond the measured rates comes from the derive step
(:mod:`assay.analysis.derived.derive`): one Rpeak per precision, and each rate's share of the peak
of the cores it used, flagged when above 100 %; the BLAS and the kernels each rate ran on, and why
a rate is far below Rpeak (:mod:`assay.analysis.derived.whylow`).

Each method has its own rows: our DGEMM probe; HPL's Rmax per MPI ("HPL Rmax (OpenMPI 4.1.4)",
the LU probe or a user's xhpl), its share of Rpeak being HPL's efficiency Rmax / Rpeak; HPL
inside HPCC ("HPL Rmax (inside HPCC)", HPL 2.0's own panel algorithms and generator, run with
HPCC's other tests); HPCC's DGEMM per process (StarDGEMM, one core's peak) and on one process
(SingleDGEMM). An Rmax of our LU on a P×Q grid (ranks given: the multi-node method) says on its
row that ScaLAPACK's LU has no lookahead and read 0.81 of HPL's (``docs/benchmarks.md``).
"""

from __future__ import annotations

from assay.analysis.derived.derive import Derived, per_process
from assay.analysis.statistics.stats import Figure
from assay.model import Sample
from assay.report.table import Table, count
from assay.units import format_value

COMPUTE_METRICS = ("compute.rpeak", "compute.dgemm", "compute.sgemm", "compute.hpl")
HPCC_DGEMM = {"star": "StarDGEMM (inside HPCC)", "single": "SingleDGEMM (inside HPCC)"}


def compute_figures(figures: list[Figure]) -> list[Figure]:
    """Our DGEMM probe's figures, HPL's (per MPI), and HPCC's HPL, Rpeak and DGEMM."""
    return [
        f
        for f in figures
        if (f.sample.probe == "dgemm" and f.sample.metric in COMPUTE_METRICS)
        or (f.sample.probe == "hpl" and f.sample.metric in ("compute.hpl", "compute.rpeak"))
        or (f.sample.probe == "hpcc" and f.sample.metric in COMPUTE_METRICS)
    ]


def rate_label(s: Sample) -> str:
    """The row's method and, for HPL, its MPI, as the MPI tables name it."""
    p = s.params
    if s.probe == "hpcc":
        if s.metric == "compute.hpl":
            return "HPL Rmax (inside HPCC)"
        return HPCC_DGEMM.get(str(p.get("variant")), "DGEMM (inside HPCC)")
    if s.metric == "compute.hpl":
        mpi = p.get("mpi_label") or p.get("mpi")
        name = "HPL Rmax, xhpl" if p.get("engine") == "xhpl" else "HPL Rmax"
        return f"{name} ({mpi})" if mpi else name
    return s.metric.split(".")[1].upper()


def _seconds(x: object) -> str:
    return f"{x:.3g} s" if isinstance(x, int | float) else "? s"


def hpl_detail(p: dict) -> str:
    """N, NB, P×Q, the time of the solve and the budget it was sized for, the residual."""
    out = f"{p['variant']} " if isinstance(p.get("variant"), str) else ""
    out += f"N={p.get('N')} NB={p.get('NB')} P×Q={p.get('P')}×{p.get('Q')}"
    if p.get("run") is not None:
        out = f"run {p['run']}: {out}"
    out += f", {_seconds(p.get('time_s'))}"
    budget = p.get("budget_s") or p.get("time_budget")
    if isinstance(budget, int | float):
        out += f" of a {budget:g} s budget"
    elif str(p.get("sizing", "")).endswith("as given"):
        out += " (N given: no budget)"
    planned = p.get("n_planned")
    if isinstance(planned, int) and planned != p.get("N"):
        out += f", N lowered from {planned} by the pilot"
    if isinstance(p.get("residual"), float):
        out += f", residual {p['residual']:.3g} PASSED"
    if (note := scalapack_note(p)) is not None:
        out += f"; {note}"
    return out


# bench/hpl_vs_hpcc.py, docs/benchmarks.md: ScaLAPACK's LU against HPL inside hpcc, same
# N/NB/P×Q, one rank per core on one node.
SCALAPACK_SHARE = 0.81


def nodes_of(p: dict) -> int:
    """The nodes a run spanned: its distinct hosts (Slurm), else the nodes it was sized for."""
    hosts = p.get("hosts")
    n_hosts = len(set(hosts)) if isinstance(hosts, list) else 0
    sized = p.get("sized_for_nodes") if isinstance(p.get("sized_for_nodes"), int) else 0
    return max(n_hosts, sized, 1)


def scalapack_note(p: dict) -> str | None:
    """What an Rmax of our ScaLAPACK LU (a P×Q grid: ranks given, the multi-node method) is
    worth against HPL's; None for the one-process LU, a user's xhpl and HPCC's HPL."""
    if p.get("engine") != "lu" or not str(p.get("method", "")).startswith("ScaLAPACK"):
        return None
    nodes = nodes_of(p)
    where = f"across {nodes} nodes" if nodes > 1 else "on a P×Q grid"
    return (
        f"{where}: ScaLAPACK's LU without lookahead, {SCALAPACK_SHARE:.2f} of HPL's Rmax in hpcc "
        "at the same N/NB/P×Q (docs/benchmarks.md): a lower bound; for HPL's own set "
        "params.xhpl"
    )


def _n(s: Sample) -> int:
    n = s.params.get("N", 0)
    return n if isinstance(n, int) else 0


def _highest(f: Figure) -> float:
    return max(f.values) if f.values else f.sample.value


def best_hpl(figures: list[Figure]) -> tuple[dict[str, Figure], dict[str, int]]:
    """Per HPL method (row label), its best test -- the Rmax -- and how many tests it ran.

    A sweep (several N, NB, P×Q or variants) is one Rmax, the highest rate, named with its
    configuration; the other tests are listed as tests. Repetitions of one configuration are
    already one figure: it competes with its highest repetition, as TOP500 takes the best run."""
    best: dict[str, Figure] = {}
    tests: dict[str, int] = {}
    for f in figures:
        if f.sample.metric != "compute.hpl":
            continue
        label = rate_label(f.sample)
        tests[label] = tests.get(label, 0) + 1
        if label not in best or _highest(f) > _highest(best[label]):
            best[label] = f
    return best, tests


def compute_table(figures: list[Figure], derived: Derived) -> Table | None:
    """Rpeak rows (one per precision), then each rate with its share of Rpeak."""
    rows, notes = [], []
    for precision in ("dp", "sp"):
        r = derived.rpeaks.get(precision)
        if r is None or not any(f.sample.probe == r.probe for f in figures):
            continue
        label = precision.upper()
        rows.append([f"Rpeak ({label})", format_value(r.flops, "GFLOP/s"), "", "", ""])
        if r.derivation:
            notes.append(f"Rpeak {label}: {r.derivation}")
    order = {m: i for i, m in enumerate(COMPUTE_METRICS)}
    best, tests = best_hpl(figures)

    def key(f: Figure) -> tuple:
        s = f.sample
        first = best.get(rate_label(s)) is not f  # the Rmax row before the other tests
        return (order.get(s.metric, 9), s.probe == "hpcc", rate_label(s), first, _n(s))

    for f in sorted(figures, key=key):
        s, p = f.sample, f.sample.params
        if s.metric == "compute.rpeak":
            continue
        what = rate_label(s)
        if s.metric == "compute.hpl":
            detail = hpl_detail(p)
            if tests.get(what, 1) > 1 and best[what] is f:
                detail = f"best of {tests[what]} HPL tests: {detail}"
                if f.repetitions > 1:
                    top = format_value(_highest(f), "GFLOP/s")
                    detail += f"; its highest of {f.repetitions} repetitions: {top} GFLOP/s"
            elif tests.get(what, 1) > 1:
                what = what.replace("HPL Rmax", "HPL test", 1)  # one test of a sweep, not Rmax
        elif per_process(s):
            detail = f"n={p.get('n')}, one process"
            detail += " of each core" if p.get("variant") == "star" else " alone"
        else:
            detail = f"n={p.get('n')}, {p.get('threads', '?')} threads"
        if s.metric != "compute.hpl" and p.get("run") is not None:
            detail = f"run {p['run']}: {detail}"  # runs appended to one file, kept apart
        frac = derived.fraction_of(f)
        share = "–"
        kernel = derived.kernel_of(f)
        if kernel is not None:
            detail += f"; {kernel.label}"
            notes.append(f"{what}: BLAS {kernel.label} — {kernel.how}")
        if frac is not None and frac.fraction is not None:
            share = f"{100 * frac.fraction:.1f}%"
            if s.metric == "compute.hpl":
                share = f"efficiency {share}"  # Rmax / Rpeak, TOP500's efficiency
            if kernel is not None and kernel.fallback:
                share += " (BLAS fallback kernel)"  # never a plain low share: the why says it
            if frac.flag:
                # Above 100 % the peak is wrong, not the machine: never shown without a word.
                share += " (Rpeak too low)"
                notes.append(f"{what}: {frac.flag}")
            if frac.scope:
                detail += f"; % of the Rpeak of {frac.scope}"
            elif per_process(s):
                detail += "; % of one core's Rpeak"
        elif frac is not None and frac.note:
            notes.append(f"{what}: no % of Rpeak — {frac.note}")
        rows.append([what, format_value(s.value, "GFLOP/s"), share, count(f), detail])
        if (why := derived.why_of(f)) is not None:
            notes.append(why.text())
    if not rows:
        return None
    if any(r[0].startswith("HPL Rmax") for r in rows):
        notes.append(
            "Rmax: HPL's rate, as TOP500 and vendors name it; its efficiency is Rmax / Rpeak."
        )
    cols = ["", "GFLOP/s", "% of Rpeak", "n", "details"]
    notes = list(dict.fromkeys(notes))  # each once, in the order of the rows
    return Table("compute", "Compute (Rpeak, DGEMM, HPL Rmax)", cols, rows, notes)
