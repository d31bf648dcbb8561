"""A Vdbench parameter file as an assay suite: ``assay run --vdbench FILE``.

``vdbench_suite(path, ...)`` loads the file and its includes (``assay.vdbench.load``),
translates every run definition (each combination of its for-loops) into fio jobs, and makes
one ``[[bench]]`` of the ``fio`` probe per translated run, in the file's order:

* the run's jobs are one *group* (probe param ``groups``): one fio invocation, every job at
  once, as Vdbench drives all the SDs of a run at once (guide 1.15: a run "runs all the
  workloads ... concurrently");
* ``iorate=max`` -> ``mode = "workloads"``, uncapped; ``iorate=curve`` -> ``mode = "curve"``
  with the run's ``curve=`` percentages (Vdbench's default 10,50,70,80,90,100) and
  ``stopcurve=`` as ``max_latency_ms`` (both are response times in ms); ``iorate=N`` ->
  ``mode = "workloads"`` with the translation's per-job ``rate_iops`` caps (N divided evenly
  over the threads, Poisson arrivals);
* on Slurm (``per_host``) a run whose SDs belong to several ``hd=`` hosts is one bench per
  host, host i on allocation node i, the hosts of a run at the same time;
* ``elapsed``/``warmup``/``size`` override every run and SD, like Vdbench's ``-e``/``-w``
  execution parameters (for a short local run of a production file);
* LUNs: ``lun_map`` remaps path prefixes (``{"/mnt/vdb1": "/scratch/a"}``, the longest
  matching prefix wins, see ``load_vdbench``); ``target_dir`` puts every LUN in one directory
  as a file of its base name (``/mnt/vdb3/file-5-3`` -> ``DIR/file-5-3``) and makes that
  directory the bench's ``target``, so the O_DIRECT check and the free-space check are made
  where the files are. The fio probe's safety rules apply to every LUN: an existing file assay
  did not create, or a device, is refused unless ``--destructive``; files assay creates are
  removed afterwards.

Everything the fio jobs do not do is returned as a note ``file:line: item: reason`` -- the
translation's own (``Translation.untranslated``: remote ``hd=`` hosts, JVM counts, SD/WD/RD
keywords without a fio equivalent, file system definitions...) and this module's: Vdbench's
reporting ``interval=``, runs whose SDs belong to several Vdbench hosts (all run from here),
and LUNs that ``target_dir`` maps onto the same file.

``suite_toml(spec, notes)`` writes the suite as TOML (the notes as comments), to keep with the
run or to run again with ``assay run FILE.toml``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from assay.errors import SuiteError
from assay.fio.job import FioJob
from assay.suite.schema import BenchSpec, SuiteSpec
from assay.suite.writer import suite_toml as write_suite
from assay.vdbench.definitions import TranslatedRun, Untranslated
from assay.vdbench.load import load_vdbench
from assay.vdbench.translate import translate

# FioJob fields the fio probe's custom jobs take (``directory`` is the probe's ``target``)
_JOB_FIELDS = tuple(f.name for f in dataclasses.fields(FioJob) if f.name != "directory")


def vdbench_suite(
    path: str | os.PathLike[str],
    *,
    lun_map: Mapping[str, str] | None = None,
    target_dir: str | os.PathLike[str] | None = None,
    elapsed: float | None = None,
    warmup: float | None = None,
    size: int | None = None,
    per_host: bool = False,
) -> tuple[SuiteSpec, list[str]]:
    """The suite that runs the Vdbench parameter file ``path`` with fio, and the notes naming
    everything not translated. ``per_host`` (a Slurm run): a run whose SDs belong to several
    ``hd=`` hosts becomes one bench per host, host i (in the file's order) on allocation node
    i, all at once (:func:`host_benches`). Raises ``ParseError`` (file, line, keyword) for a
    bad file and ``SuiteError`` for bad arguments."""
    if lun_map and target_dir is not None:
        raise SuiteError(
            "give lun_map (--lun-map OLD=NEW) or target_dir (--target DIR), not both",
            hint="--target DIR puts every LUN in DIR; --lun-map keeps the paths below a prefix",
        )
    target = Path(target_dir).expanduser().absolute() if target_dir is not None else None
    mapping: Mapping[str, str] | Callable[[str], str] | None = lun_map
    if target is not None:
        mapping = lun_in(target)
    config = load_vdbench(path, lun_map=mapping)
    translation = translate(config, elapsed=elapsed, warmup=warmup, size=size)
    notes = [note_text(u) for u in translation.untranslated]
    order = [h.name for h in config.hosts]
    benches = []
    for run in translation.runs:
        split = per_host and len(set(run.hosts.values())) > 1
        benches += host_benches(run, target, order) if split else [bench_of(run, target)]
        notes += run_notes(run, split)
    if target is not None:
        notes += collisions(config.storage)
    name = Path(path).name
    spec = SuiteSpec(
        name=f"vdbench-{name}",
        description=f"Vdbench parameter file {path} ({len(benches)} run(s)) translated to fio",
        bench=benches,
    )
    # The fio probe validates these params when the suite is planned (this module must not
    # know the probe: the arrow runs suite -> plan -> probes, never back).
    return spec, notes


def lun_in(directory: Path) -> Callable[[str], str]:
    """Every LUN as a file of its base name in ``directory``."""

    def mapped(lun: str) -> str:
        base = Path(lun.rstrip("/")).name or "lun"
        return str(directory / base)

    return mapped


def note_text(u: Untranslated) -> str:
    where = f"{u.file}:{u.line}" if u.file else f"line {u.line}"
    return f"{where}: {u.item}: {u.reason}"


def job_fields(job: FioJob) -> dict[str, Any]:
    """A translated job as the fio probe's custom job dict (FioJob fields, None left out)."""
    out: dict[str, Any] = {}
    for name in _JOB_FIELDS:
        value = getattr(job, name)
        if value is None or (name == "extra" and not value):
            continue
        out[name] = dict(value) if name == "extra" else value
    return out


def bench_of(run: TranslatedRun, target: Path | None) -> BenchSpec:
    """One ``fio`` bench running the translated run's jobs together."""
    jobs = run.jobs
    params: dict[str, Any] = {
        "mode": "curve" if run.mode == "curve" else "workloads",
        "groups": [{"name": run.name, "jobs": [job_fields(j) for j in jobs]}],
        # the probe's own settings only size its time budget here: every job sets its own
        "runtime": max(j.runtime or 0 for j in jobs) or 1.0,
        "ramp_time": max(j.ramp_time or 0 for j in jobs),
        "size": max(j.size or 0 for j in jobs) or 1,
        # any job asking for O_DIRECT makes the driver check the target can do it
        "direct": any(j.direct for j in jobs),
    }
    if run.mode == "curve":
        params["curve"] = list(run.curve or [])
        if run.stopcurve_ms:
            params["max_latency_ms"] = run.stopcurve_ms
    if target is not None:
        params["target"] = str(target)
    return BenchSpec(probe="fio", name=run.name, params=params)


def host_benches(run: TranslatedRun, target: Path | None, order: list[str]) -> list[BenchSpec]:
    """One bench per Vdbench host of the run, its own SDs' jobs: host ``order[i]`` runs on
    allocation node i (fio param ``node_index``), the run's hosts at once (``node_group``), each
    host's figures under its name (``host_label``, the report's Host column)."""
    benches = []
    for host in sorted(set(run.hosts.values()), key=order.index):
        mine = [j for j in run.jobs if run.hosts.get(j.name) == host]
        bench = bench_of(dataclasses.replace(run, jobs=mine), target)
        bench.params.update(node_index=order.index(host), node_group=run.name, host_label=host)
        benches.append(bench.model_copy(update={"name": f"{run.name}@{host}"}))
    return benches


def run_notes(run: TranslatedRun, per_host: bool = False) -> list[str]:
    """What the suite leaves out of a run that the translation kept as data."""
    where = f"{run.source_file}:{run.source_line}: rd={run.name}"
    notes = []
    if run.interval:
        notes.append(
            f"{where}: interval={run.interval:g}: Vdbench's reporting interval; assay reports "
            "each run as a whole"
        )
    hosts = sorted(set(run.hosts.values()))
    if per_host:
        notes.append(
            f"{where}: Vdbench hosts {', '.join(hosts)}: each on its own allocation node, in "
            "hd= order, all at once; each host's figures are its own (no merged total)"
        )
    elif hosts and hosts != ["localhost"]:
        shown = ", ".join(hosts[:6]) + (f", ... ({len(hosts)} hosts)" if len(hosts) > 6 else "")
        notes.append(
            f"{where}: the SDs of Vdbench host(s) {shown}: all {len(run.jobs)} jobs run from "
            "this machine, at once (with --on slurm each host runs on its own node)"
        )
    return notes


def collisions(storage: list[Any]) -> list[str]:
    """LUNs that the target directory maps onto one file (same base name)."""
    by_target: dict[str, list[Any]] = {}
    for sd in storage:
        if sd.target:
            by_target.setdefault(sd.target, []).append(sd)
    notes = []
    for target, sds in by_target.items():
        luns = sorted({sd.lun for sd in sds})
        if len(luns) > 1:
            notes.append(
                f"{sds[0].where}: sd={','.join(sd.name for sd in sds)}: LUNs {', '.join(luns)} "
                f"all become {target}: the SDs share one file (same base name)"
            )
    return notes


def suite_toml(spec: SuiteSpec, notes: list[str] | None = None) -> str:
    """The suite as TOML that ``assay run FILE.toml`` reads back to the same suite, with what
    could not be translated as comments."""
    return write_suite(spec, ["Not translated (Vdbench -> fio):", *notes] if notes else None)
