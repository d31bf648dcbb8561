"""assay's own JSON report (``assay report --format json``) read back as samples.

The schema is documented in ``docs/report-json.md``: an object with ``"schema":
"assay-report"``, an integer ``schema_version`` (this reader knows 1 and 2), ``run``, ``system``,
``jobs`` and ``samples`` (each a stored sample: probe, metric, value, unit, better, params,
stats). A newer major version is refused rather than misread.
"""

from __future__ import annotations

from typing import Any

from assay.errors import ParseError
from assay.model import Sample
from assay.parsers.base import ParseResult
from assay.parsers.numbers import checked, load_json

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
    if not isinstance(version, int) or version > SCHEMA_VERSION or version < 1:
        raise ParseError(
            f"schema_version {version!r} is not one this assay reads (1..{SCHEMA_VERSION})",
            source=source,
            hint="import it with the assay version that wrote it, or a newer one",
        )
    rows = doc.get("samples")
    if not isinstance(rows, list):
        raise ParseError('no "samples" list', source=source)
    result = ParseResult("assay-json", meta=_meta(doc))
    for i, row in enumerate(rows):
        try:
            sample = Sample.from_dict(row)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ParseError(f"sample {i} is not a sample: {exc!r}", source=source) from None
        # Keep each MPI's own series: the importer labels unlabelled samples with --label,
        # which would fold OpenMPI and MPICH into one column.
        if sample.params.get("mpi") and not sample.params.get("mpi_label"):
            sample.params["mpi_label"] = str(sample.params["mpi"])
        sample.params.setdefault("source_run", doc.get("run", {}).get("run_id", ""))
        result.samples.append(sample)
    return result


def _meta(doc: dict[str, Any]) -> dict[str, Any]:
    run = doc.get("run") or {}
    return {
        "run_id": run.get("run_id"),
        "suite": run.get("suite"),
        "system": doc.get("system"),
        "schema_version": doc.get("schema_version"),
    }
