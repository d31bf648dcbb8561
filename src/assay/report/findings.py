"""The derived findings a JSON report carries beside the samples: the BLAS and kernels each
compute rate ran on, and why a figure is far below its physical peak (the same lines the term,
Markdown and HTML reports print under their tables; :mod:`assay.analysis.derived.whylow`)."""

from __future__ import annotations

from typing import Any

from assay.analysis.derived.derive import derive
from assay.analysis.derived.whylow import rate_name
from assay.figures.folded import folded_of
from assay.store import LoadedRun


def findings_of(runs: list[LoadedRun]) -> dict[str, list[dict[str, Any]]]:
    """{"blas_kernels": [...], "why_low": [...]} over the runs, each entry with its run id."""
    kernels: list[dict[str, Any]] = []
    why: list[dict[str, Any]] = []
    for run in runs:
        figures = [
            f for f in folded_of(run).figures if f.sample.params.get("placement") != "all-pairs"
        ]
        derived = derive(figures, run.system)
        for f in figures:
            ident = {"run_id": run.info.run_id, "probe": f.sample.probe, "metric": f.sample.metric}
            if (k := derived.kernel_of(f)) is not None:
                kernels.append(
                    {
                        **ident,
                        "what": rate_name(f.sample),
                        "kernel": k.label,
                        "how": k.how,
                        "fallback": k.fallback,
                    }
                )
            if (w := derived.why_of(f)) is not None:
                why.append(
                    {
                        **ident,
                        "what": w.what,
                        "peak": w.peak,
                        "share": w.share,
                        "causes": list(w.causes),
                        "text": w.text(),
                    }
                )
    return {"blas_kernels": kernels, "why_low": why}
