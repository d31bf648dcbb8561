"""Commands for "how does my cluster compare?": ``compare`` (with another run or ``--ref`` a
published set), ``references`` and ``summary`` (``history`` and ``label``: ``assay.cli.history``).

Registered on the main typer app by ``register(app)``; the work is done by pure functions in
``assay.analysis`` (verdict, bestof, changepoint) and rendered by ``assay.report.reference``.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from assay.cli.common import open_store as run_store
from assay.cli.common import say_run_damage
from assay.errors import AssayError, NotFoundError

if TYPE_CHECKING:  # imported when used: pydantic models would slow every 'assay --help'
    from assay.analysis.compare.verdict import Measured
    from assay.references.model import Tolerance
    from assay.store import LoadedRun, RunStore

err = Console(stderr=True, highlight=False)
FORMATS = ("term", "md", "html")


def emit(sections: list, fmt: str, title: str = "assay", charts: tuple = ()) -> None:
    from assay.report.reference import to_markdown, to_term

    if fmt not in FORMATS:
        raise AssayError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fmt == "html":  # one self-contained page, with plots (assay.report.html)
        from assay.report.html import sections_page

        sys.stdout.write(sections_page(title, sections, charts))
        return
    if fmt == "md":
        sys.stdout.write(to_markdown(sections))
        return
    sys.stdout.write(to_term(sections))


# Issue 28: a band wider than this (x11) or a --fail-below outside (0, 1] is a CI gate that
# never shuts; NaN compares false with everything, so it shut nothing either.
MAX_TOLERANCE = 10.0


def check_fail_below(ratio: float | None) -> None:
    """``--fail-below``: a finite ratio above 0 and at most 1, as ``assay check`` takes it."""
    if ratio is not None and not (math.isfinite(ratio) and 0 < ratio <= 1):
        raise AssayError(
            f"--fail-below {ratio}: a ratio above 0 and at most 1 (0.95: more than 5% worse)"
        )


def parse_tolerances(specs: list[str] | None) -> dict[str, Tolerance]:
    """``0.1`` (±10% for every metric), ``p2p.latency=0.1``, ``memory.triad=-0.05:0.2``."""
    from assay.references.model import Tolerance

    result: dict[str, Tolerance] = {}
    for spec in specs or []:
        metric, _, band = spec.rpartition("=")
        try:
            if ":" in band:
                low_s, high_s = band.split(":", 1)
                low, high = float(low_s), float(high_s)
            else:
                low, high = -abs(float(band)), abs(float(band))
        except ValueError:
            raise AssayError(
                f"--tolerance {spec!r}: expected FRACTION, METRIC=FRACTION or METRIC=LOW:HIGH "
                "(e.g. 0.1, p2p.latency=0.1, memory.triad=-0.05:0.2)"
            ) from None
        if not (math.isfinite(low) and math.isfinite(high)):  # nan/inf: a gate that never shuts
            raise AssayError(f"--tolerance {spec!r}: a fraction is a finite number")
        if low > 0 or high < 0:
            raise AssayError(f"--tolerance {spec!r}: LOW must be <= 0 and HIGH >= 0")
        if low < -1 or high > MAX_TOLERANCE:
            raise AssayError(
                f"--tolerance {spec!r}: LOW is at least -1 (every figure down to 0) and HIGH at "
                f"most {MAX_TOLERANCE:g}; a wider band calls any figure 'same'"
            )
        result[metric or "default"] = Tolerance(low, high)
    return result


def _measured(store: RunStore, ref: str | None) -> tuple[LoadedRun, list[Measured]]:
    """A run and its figures, read through its folded-figure cache (``assay.figures.folded``):
    a million stored samples are not read again for every comparison."""
    from assay.analysis.compare.verdict import measured_figures
    from assay.figures.folded import folded_of

    run = store.load(ref, samples=False)
    figures = measured_figures(folded_of(run).figures)
    say_run_damage(run)  # damaged lines skipped: said once
    return run, figures


def _flavors(run: LoadedRun) -> dict[str, str]:
    return {m.name: m.flavor for m in run.system.mpis}


# -- compare ----------------------------------------------------------------------------------


def compare(
    run_a: Annotated[
        str | None,
        typer.Argument(
            metavar="RUN",
            help="With --ref: the run to judge (default: latest). Else: the reference run.",
        ),
    ] = None,
    run_b: Annotated[
        str | None,
        typer.Argument(metavar="[RUN2]", help="The run to judge against RUN; default: latest."),
    ] = None,
    ref: Annotated[
        str | None,
        typer.Option("--ref", help="A published reference set (see 'assay references')."),
    ] = None,
    fail_below: Annotated[
        float | None,
        typer.Option(
            "--fail-below",
            help="Exit 1 when a figure's ratio is below RATIO (0.95: more than 5% worse) and "
            "the difference is not shown to be noise.",
        ),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option("--fail-on", help="'worse': exit 1 when any comparable figure is worse."),
    ] = None,
    tolerance: Annotated[
        list[str] | None,
        typer.Option(
            "--tolerance",
            help="Band counted as 'same': 0.1, METRIC=0.1 or METRIC=LOW:HIGH (repeatable).",
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="term, md or html.")] = "term",
) -> None:
    """Compare a run with a published reference set, or two runs, figure by figure.

    Examples:

      assay compare latest --ref azure-hb

      assay compare BASELINE --fail-below 0.95      (in CI, against the latest run)
    """
    from assay.analysis.compare.refcompare import compare_reference
    from assay.analysis.compare.verdict import compare_runs, failing
    from assay.references import load as load_reference
    from assay.report.reference import reference_comparison, run_comparison

    if fail_on not in (None, "worse"):
        raise AssayError(f"--fail-on {fail_on!r}: only 'worse' is known")
    check_fail_below(fail_below)
    tolerances = parse_tolerances(tolerance)
    store = run_store()
    if ref is not None:
        if run_b is not None:
            raise AssayError("give one RUN with --ref (or two runs without it), not both")
        run, figures = _measured(store, run_a or "latest")
        reference = load_reference(ref)
        default_nodes = 1 if run.info.source == "assay" else None
        comp = compare_reference(
            figures, reference, flavors=_flavors(run), tolerances=tolerances,
            default_nodes=default_nodes,
        )  # fmt: skip
        if not comp.rows and not comp.unmatched:
            raise AssayError(f"run {run.info.run_id} has no figures to compare")
        bad = failing(comp.rows, fail_below=fail_below, fail_on_worse=fail_on == "worse")
        sections = reference_comparison(comp, reference, run.info.run_id, bad)
    else:
        if run_a is None:
            raise AssayError(
                "compare with what? give RUN (and RUN2, default latest), or --ref NAME",
                hint="'assay references' lists the published sets",
            )
        base, base_figs = _measured(store, run_a)
        new, new_figs = _measured(store, run_b or "latest")
        comp = compare_runs(base_figs, new_figs, tolerances=tolerances)
        if not comp.rows:
            raise AssayError(
                f"runs {base.info.run_id} and {new.info.run_id} have no figure in common",
                hint="compare runs of the same suite (or of suites sharing probes)",
            )
        bad = failing(comp.rows, fail_below=fail_below, fail_on_worse=fail_on == "worse")
        sections = run_comparison(comp, base.info.run_id, new.info.run_id, bad)
    charts = ()
    if fmt == "html":
        from assay.report.plots import comparison_chart

        charts = (comparison_chart(comp.rows, "Ratio to the reference, by verdict"),)
    emit(sections, fmt, "assay compare", charts)
    if bad:
        what = f"below {fail_below} x the reference" if fail_below is not None else "worse"
        err.print(Text(f"{len(bad)} figure(s) {what}, beyond what the noise explains"))
        raise typer.Exit(1)


# -- references ------------------------------------------------------------------------------


def references(
    args: Annotated[
        list[str] | None,
        typer.Argument(metavar="[NAME | add NAME]", help="A set to show, or 'add NAME'."),
    ] = None,
    from_run: Annotated[
        str | None, typer.Option("--from", help="With add: the run to make the set from.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="With add: replace a set.")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="term or md.")] = "term",
) -> None:
    """List the published and user reference sets, show one, or make one from a run.

    Examples:

      assay references

      assay references azure-hb

      assay references add --from latest my-cluster-baseline
    """
    from assay.references import ReferenceError, available, load_file
    from assay.report.reference import reference_list, reference_set

    args = list(args or [])
    if args and args[0] == "add":
        if len(args) != 2 or from_run is None:
            raise AssayError("usage: assay references add --from RUN NAME")
        _add(args[1], from_run, force)
        return
    if len(args) > 1:
        raise AssayError("give at most one NAME (or 'add NAME')")
    if args:
        from assay.references import load

        emit(reference_set(load(args[0])), fmt)
        return
    entries = []
    for name, (path, builtin) in sorted(available().items()):
        origin = "built-in" if builtin else f"user ({path.parent})"
        try:
            ref = load_file(path, builtin)
            entries.append((name, origin, ref.title, ref.date or "—"))
        except ReferenceError as exc:  # one bad file must not hide the others
            entries.append((name, origin, f"unreadable: {exc}", "—"))
    emit([reference_list(entries)], fmt)


def _add(name: str, run_ref: str, force: bool) -> None:
    import re

    from assay.analysis.compare.verdict import identity
    from assay.references import user_dir
    from assay.references.fromrun import RunFigure, to_toml
    from assay.units import metric_info

    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name):
        raise AssayError(f"reference name {name!r}: use lower-case letters, digits, . _ -")
    run, run_figures = _measured(run_store(), run_ref)
    directory = user_dir()
    path = directory / f"{name}.toml"
    if path.exists() and not force:
        raise AssayError(f"{path} exists", hint="use --force to replace it")
    node, node_note = _node_of(run)
    figures = []
    for f in run_figures:
        info = metric_info(f.metric)
        if f.value <= 0 or f.unit != info.unit or f.metric.startswith("inventory."):
            continue  # the inventory goes in [node]
        params = dict(identity(f.params))
        typed = {k: f.params[k] for k in params if isinstance(f.params[k], str | int | float)}
        figures.append(RunFigure(f.metric, f.probe, typed, f.value, info.display, f.stats))
    if not figures:
        raise AssayError(f"run {run.info.run_id} has no figures to keep")
    s = run.system
    system = ", ".join(x for x in (s.hostname, s.cpu_model) if x) or "unknown system"
    title = f"run {run.info.run_id} ({run.info.suite})"
    if run.info.label:
        title += f": {run.info.label}"
    text = to_toml(
        name, title, system=system, source=f"assay run {run.info.run_id} ({run.path})",
        date=run.info.created[:10], figures=figures, node=node,
    )  # fmt: skip
    _write_reference(path, text)
    err.print(Text(f"wrote {path}: {len(figures)} figures from run {run.info.run_id}"))
    err.print(Text(node_note))
    err.print(Text(f"compare with it: assay compare RUN --ref {name}"))


def _write_reference(path: Path, text: str) -> None:
    """``text`` to ``path`` whole or not at all: written in a staging directory of its own (the
    same file name, so the loader's name check applies), read back, then renamed into place;
    on any failure nothing is left behind."""
    from assay.references import ReferenceError, load_file

    staging = path.parent / ".writing"
    own: Path | None = None
    try:
        staging.mkdir(parents=True, exist_ok=True)
        own = Path(tempfile.mkdtemp(dir=staging))  # concurrent 'add's never share a file
        tmp = own / path.name
        tmp.write_text(text, encoding="utf-8")
        load_file(tmp)  # what we write must read back
        tmp.replace(path)
    except OSError as exc:
        raise AssayError(f"cannot write {path}: {exc.strerror or exc}") from None
    except ReferenceError as exc:  # a bug in the writer: say so, keep nothing half-made
        raise AssayError(
            f"cannot write {path}: the set written does not read back: {exc}"
        ) from None
    finally:
        if own is not None:
            shutil.rmtree(own, ignore_errors=True)
        with contextlib.suppress(OSError):  # another 'add' may be writing there right now
            staging.rmdir()


def _node_of(run: LoadedRun) -> tuple[dict | None, str]:
    """The node type and inventory a baseline made from ``run`` records (assay check)."""
    from assay.analysis.check.checkrun import node_table
    from assay.analysis.check.health import node_figures
    from assay.analysis.check.nodetype import facts_of_system
    from assay.figures.folded import folded_of

    folded = folded_of(run)
    local = None if run.info.batch else facts_of_system(run.system)
    host = local.host if local else ""
    return node_table(node_figures(folded.by_host, folded.figures, host), local)


# -- summary -----------------------------------------------------------------------------------


def summary(
    runs: Annotated[
        list[str] | None, typer.Argument(metavar="[RUN...]", help="Runs; default: the latest.")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="term or md.")] = "term",
) -> None:
    """The best figure per metric across runs, and the one-line workload summary.

    As the Charmed HPC page lists its results (metric, system, result, unit, note) and the
    Azure HB/HC pages open with "STREAM Triad ...; HPL ... Rpeak ... Rmax; RDMA ...; FIO ...; IOR".
    """
    from assay.analysis.compare.bestof import Source, best_of, one_line, workload_summary
    from assay.report.reference import summary as summary_sections

    store = run_store()
    sources = []
    for ref in runs or ["latest"]:
        run, figures = _measured(store, ref)
        sources.append(Source(run.info.run_id, run.system.hostname or "unknown host", figures))
    bests = best_of(sources)
    if not bests:
        raise NotFoundError("the selected runs have no headline figures to summarise")
    rows = workload_summary(sources)
    emit(summary_sections(bests, rows, one_line(rows)), fmt)


def register(app: typer.Typer) -> None:
    """Add these commands to the main app."""
    app.command("compare")(compare)
    app.command("references")(references)
    app.command("summary")(summary)


__all__ = ["emit", "err", "parse_tolerances", "register", "run_store"]
