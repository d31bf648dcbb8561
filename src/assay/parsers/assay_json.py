"""assay's own JSON report (``assay report --format json``) read back as samples.

The schema is documented in ``docs/report-json.md``: an object with ``"schema":
"assay-report"``, an integer ``schema_version`` (this reader knows 1 and 2), ``run``, ``system``,
``jobs`` and ``samples`` (each a stored sample: probe, metric, value, unit, better, params,
stats). A newer major version is refused rather than misread.
"""

from __future__ import annotations

from typing import Any

from assay.errors import ParseError
from assay.model import Sample, Stats, current_params
from assay.parsers.base import ParseResult
from assay.parsers.jsonshape import json_object, json_scalar, json_text
from assay.parsers.numbers import checked, json_int, json_number, load_json

_STATS = frozenset(Stats.__dataclass_fields__)

SCHEMA = "assay-report"
SCHEMA_VERSION = 2  # 2: the run record's "slurm" became "batch" (any batch launcher)


def looks_like(text: str) -> bool:
    head = text[:4096]
    return f'"schema": "{SCHEMA}"' in head


@checked  # a value no measurement can have (NaN, negative, absurd) is refused, as in every parser
def parse(text: str, source: str = "<text>") -> ParseResult:
    doc = load_json(text, source=source)  # NaN/Infinity and too-long numerals are parse errors
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ParseError(
            'not an assay JSON report (no "schema": "assay-report")',
            source=source,
            hint="write one with: assay report RUN --format json -o FILE",
        )
    version = doc.get("schema_version")
    if type(version) is not int or version > SCHEMA_VERSION or version < 1:
        raise ParseError(
            f"schema_version {version!r} is not one this assay reads (1..{SCHEMA_VERSION})",
            source=source,
            hint="import it with the assay version that wrote it, or a newer one",
        )
    rows = doc.get("samples")
    if not isinstance(rows, list):
        raise ParseError('no "samples" list', source=source)
    run = json_object(doc.get("run") or {}, source=source, what='"run"')
    source_run = json_text(run.get("run_id") or "", source=source, what="run.run_id")
    result = ParseResult("assay-json", meta=_meta(doc, run))
    for i, row in enumerate(rows):
        sample = _sample(row, f"sample {i}", source)
        # Keep each MPI's own series: the importer labels unlabelled samples with --label,
        # which would fold OpenMPI and MPICH into one column.
        if sample.params.get("mpi") and not sample.params.get("mpi_label"):
            sample.params["mpi_label"] = str(sample.params["mpi"])
        sample.params.setdefault("source_run", source_run)
        result.samples.append(sample)
    return result


# Params a report computes with (a size on an axis, a count of ranks): a whole number >= 0,
# as assay writes them. Null, text or a list there was a TypeError in every report (issue 28).
COUNTED = frozenset({"size", "iterations", "ranks", "nodes", "block_size", "transfer_size"})


def _count(v: Any) -> bool:
    return (type(v) is int and v >= 0) or (type(v) is float and v.is_integer() and v >= 0)


def _sample(row: Any, what: str, source: str) -> Sample:
    """One stored sample, every field the type ``assay report --format json`` writes: a
    string where a report reads a string, a number where it computes, params of flat values;
    anything else is a ParseError naming the sample and the field (docs/report-json.md)."""
    row = json_object(row, source=source, what=what)
    for key in ("probe", "metric", "unit", "better"):
        if key not in row:
            raise ParseError(f"{what} has no {key!r}", source=source)
        if not json_text(row[key], source=source, what=f"{what} {key}"):
            raise ParseError(f"{what} {key} is empty", source=source)
    where = f"{what} ({row['metric']})"
    if row["better"] not in ("higher", "lower"):
        raise ParseError(f"{where} better is {row['better']!r}, not higher or lower", source=source)
    value = json_number(row.get("value"), source=source, what=f"{where} value")
    params = json_object(row.get("params") or {}, source=source, what=f"{where} params")
    for key, v in params.items():
        json_scalar(v, source=source, what=f"{where} params.{key}")
        if key in COUNTED and not _count(v):  # the report reads these as numbers
            raise ParseError(f"{where} params.{key} is {v!r}: not a count", source=source)
    stats = None
    if row.get("stats") is not None:
        raw = json_object(row["stats"], source=source, what=f"{where} stats")
        # a field this reader does not know is left out (docs/report-json.md, "Versioning")
        numbers = {
            k: json_number(v, source=source, what=f"{where} stats.{k}")
            for k, v in raw.items()
            if k in _STATS and k != "n" and v is not None
        }
        n = json_int(raw.get("n", 0), source=source, what=f"{where} stats.n")
        stats = Stats(n=n, **numbers)
    for key in ("run_id", "job_id"):
        json_text(row.get(key) or "", source=source, what=f"{where} {key}")
    return Sample(
        probe=row["probe"],
        metric=row["metric"],
        value=value,
        unit=row["unit"],
        better=row["better"],
        params=current_params(row["metric"], dict(params)),  # an export of an older assay
        stats=stats,
        run_id=row.get("run_id") or "",
        job_id=row.get("job_id") or "",
    )


def _meta(doc: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": run.get("run_id"),
        "suite": run.get("suite"),
        "system": doc.get("system"),
        "schema_version": doc.get("schema_version"),
    }
