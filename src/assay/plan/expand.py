"""Expand a suite into concrete jobs: sweeps, MPIs, repetitions and command-line overrides.

Pure: it reads the system record and the toolchains found, and launches nothing.
"""

from __future__ import annotations

import itertools
import math
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from assay.errors import SuiteError
from assay.inputfile import load_toml
from assay.model import Job
from assay.plan.bounds import MAX_JOBS, MAX_REPEAT
from assay.probes import PlanContext, get_probe
from assay.suite.schema import BenchSpec, SuiteSpec
from assay.textutil import slugify
from assay.toolchain import select_mpis

BENCH_KEYS = {"mpi", "ranks", "nodes", "ppn", "repeat", "timeout"}


@dataclass
class Overrides:
    """What ``assay run`` may change on any suite."""

    only: list[str] = field(default_factory=list)
    mpi: list[str] | None = None
    sets: list[str] = field(default_factory=list)  # "key=value" or "probe.key=value"
    repeat: int | None = None


def parse_value(text: str) -> Any:
    """A --set value: a TOML value when it reads as one (4, 1.5, true, [1, 2]), else a string."""
    try:
        return load_toml(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_overrides(suite: SuiteSpec, overrides: Overrides) -> SuiteSpec:
    suite = suite.model_copy(deep=True)
    if overrides.repeat is not None:
        suite.repeat = overrides.repeat
        for bench in suite.bench:
            bench.repeat = None
    # --set is checked against the whole suite before --only narrows it, so one command line
    # (fast settings for every probe, say) works with any --only.
    for assignment in overrides.sets:
        _apply_set(suite, assignment)
    if overrides.only:
        known = {b.probe for b in suite.bench}
        unknown = [p for p in overrides.only if p not in known]
        if unknown:
            raise SuiteError(
                f"--only {', '.join(unknown)}: suite {suite.name!r} has no such probe",
                hint=f"its probes: {', '.join(sorted(known))}",
            )
        suite.bench = [b for b in suite.bench if b.probe in overrides.only]
    return suite


def _apply_set(suite: SuiteSpec, assignment: str) -> None:
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise SuiteError(f"--set {assignment!r}: expected key=value, e.g. --set ntimes=20")
    key, value = key.strip(), parse_value(raw.strip())
    probe_name, _, param = key.rpartition(".")
    applied = False
    for i, bench in enumerate(suite.bench):
        if probe_name and bench.probe != probe_name:
            continue
        if param in BENCH_KEYS:
            # Through the suite file's own schema, so --set is held to the same rules
            # (timeout=abc, ranks=0, timeout=inf are refused, never ignored or crashed on).
            try:
                suite.bench[i] = BenchSpec.model_validate({**bench.model_dump(), param: value})
            except ValidationError as exc:
                why = "; ".join(e["msg"] for e in exc.errors())
                raise SuiteError(f"--set {key}={raw.strip()}: {why}") from None
            applied = True
        elif param in get_probe(bench.probe).Params.model_fields:
            bench.params[param] = value
            bench.sweep.pop(param, None)
            applied = True
    if not applied:
        accepted = sorted(
            {f for b in suite.bench for f in get_probe(b.probe).Params.model_fields} | BENCH_KEYS
        )
        raise SuiteError(
            f"--set {key}: no probe in suite {suite.name!r} takes {param!r}",
            hint=f"keys it takes: {', '.join(accepted)}",
        )


def _sweep_points(bench: BenchSpec) -> Iterator[dict[str, Any]]:
    """The sweep's points one at a time: a product is counted (``sweep_size``) before any is
    made (1000 x 1000 x 100 values were 10^8 dicts built before the job bound was looked at)."""
    keys = list(bench.sweep)
    for combo in itertools.product(*bench.sweep.values()):
        yield dict(zip(keys, combo, strict=True))


def sweep_size(bench: BenchSpec) -> int:
    return math.prod(len(values) for values in bench.sweep.values())


def _check_size(suite: SuiteSpec, index: int, bench: BenchSpec, repeat: int) -> None:
    """Each point of a sweep, each repetition, is at least a job: more than the bound of a
    plan is refused from the counts alone."""
    points = sweep_size(bench)
    if points * repeat > MAX_JOBS:
        sizes = " x ".join(f"{len(v):,} {k}" for k, v in bench.sweep.items())
        times = f", {repeat:,} repetitions each" if repeat > 1 else ""
        raise SuiteError(
            f"suite {suite.name!r}, bench {index} ({bench.probe}): its sweep is {sizes} = "
            f"{points:,} points{times}: more than {MAX_JOBS} jobs, the bound of a plan; refused",
            hint="fewer sweep values or repetitions per run",
        )


def plan(suite: SuiteSpec, ctx: PlanContext, overrides: Overrides | None = None) -> list[Job]:
    """Every job of a suite, numbered in the order they will run."""
    if overrides is not None:
        suite = apply_overrides(suite, overrides)
    jobs: list[Job] = []
    for index, bench in enumerate(suite.bench, start=1):
        probe = get_probe(bench.probe)
        mpis = []
        if probe.uses_mpi:
            wanted = (overrides.mpi if overrides and overrides.mpi else None) or bench.mpi or "all"
            mpis = select_mpis(ctx.mpis, wanted)
        repeat = bench.repeat or suite.repeat
        if repeat > MAX_REPEAT:
            raise SuiteError(f"repeat {repeat}: at most {MAX_REPEAT} repetitions of a job")
        _check_size(suite, index, bench, repeat)
        for point in _sweep_points(bench):
            try:
                params = probe.Params.model_validate({**bench.params, **point})
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc'])}: "
                    + ("unknown param" if e["type"] == "extra_forbidden" else e["msg"])
                    for e in exc.errors()
                )
                known = ", ".join(probe.Params.model_fields)
                raise SuiteError(
                    f"suite {suite.name!r}, bench {index} ({bench.probe}): {problems}",
                    hint=f"{bench.probe} takes: {known}",
                ) from None
            for draft in probe.drafts(params, ctx, mpis=mpis, ranks=bench.ranks):
                for rep in range(1, repeat + 1):
                    if len(jobs) >= MAX_JOBS:
                        raise SuiteError(
                            f"suite {suite.name!r} plans more than {MAX_JOBS} jobs; refused",
                            hint="fewer repetitions, sweep points or MPIs per run",
                        )
                    n = len(jobs) + 1
                    suffix = f"-r{rep}" if repeat > 1 else ""
                    job_params = {**point, **draft.params}
                    if draft.spawn == "mpi":
                        job_params.setdefault("ranks", bench.ranks or draft.ranks)
                        job_params.setdefault("nodes", bench.nodes)
                    if repeat > 1:
                        job_params["repetition"] = rep
                    job = Job(
                        job_id=f"{n:03d}-{probe.name}-{slugify(draft.label)}{suffix}".rstrip("-"),
                        probe=probe.name,
                        argv=list(draft.argv),
                        params=job_params,
                        env=dict(draft.env),
                        spawn="mpi" if draft.spawn == "mpi" else "exec",
                        mpi=draft.mpi,
                        ranks=bench.ranks or draft.ranks,
                        threads=draft.threads,
                        nodes=bench.nodes,
                        ppn=bench.ppn,
                        timeout=bench.timeout or draft.timeout or probe.default_timeout,
                        build=draft.build,
                        repetition=rep,
                        inputs=dict(draft.inputs),
                        output_file=draft.output_file,
                        skip_reason=draft.skip_reason,
                    )
                    job.spread = probe.spread(job)  # how a scheduler spreads it over nodes
                    jobs.append(job)
    return jobs
