"""``assay check --openmetrics FILE``: each node's figures and verdicts as gauges, for
node_exporter's textfile collector (and so Prometheus and Grafana).

    assay_check_verdict{subject, kind, check, metric}    0 PASS, 1 WARN, 2 FAIL
    assay_check_figure{subject, kind, check, metric, unit}   the figure (SI unit: B/s, flop/s, s)
    assay_check_baseline{...}                            what it was judged against
    assay_check_ratio{...}                               figure / baseline as goodness (< 1 worse)
    assay_check_node_verdict{node}                       a node's worst check
    assay_check_exit_status                              0, 1 or 3, as the command exited
    assay_check_timestamp_seconds                        when the check ended (Unix time)
    assay_check_info{run_id, suite, level}               1

The text is the OpenMetrics exposition format (``# EOF`` at the end), which the Prometheus text
parser also reads (``# EOF`` is a comment there): ``promtool check metrics`` passes it. For the
textfile collector write it to a temporary name in the collector's directory and rename it, so
a scrape never reads half a file (``assay check`` does that).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from assay.analysis.check.health import EXIT_CODE, Verdict, exit_code, node_grades
from assay.textutil import xml_text

GRADE_VALUE = {"PASS": 0, "WARN": 1, "FAIL": 2}


def _label(value: object) -> str:
    # controls and lone surrogates (a non-UTF-8 node name) shown first: UTF-8 cannot carry a
    # surrogate, and the file would not be written at all (issue 28)
    text = xml_text(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def _labels(**labels: object) -> str:
    return "{" + ",".join(f"{k}={_label(v)}" for k, v in labels.items()) + "}"


def _number(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return repr(float(x))


def openmetrics_text(
    verdicts: Iterable[Verdict], *, run_id: str, suite: str, level: int | None, timestamp: float
) -> str:
    verdicts = list(verdicts)
    out: list[str] = []

    def family(name: str, help_text: str, rows: list[tuple[dict, float]]) -> None:
        out.append(f"# TYPE {name} gauge")
        out.append(f"# HELP {name} {help_text}")
        out.extend(f"{name}{_labels(**labels)} {_number(value)}" for labels, value in rows)

    def ident(v: Verdict) -> dict:
        return {"subject": v.subject, "kind": v.kind, "check": v.check, "metric": v.metric}

    family("assay_check_verdict", "Verdict of one check: 0 PASS, 1 WARN, 2 FAIL.",
           [(ident(v), GRADE_VALUE[v.grade]) for v in verdicts])  # fmt: skip
    measured = [v for v in verdicts if v.figure is not None]
    family("assay_check_figure", "The figure measured, in its SI unit (label unit).",
           [({**ident(v), "unit": v.unit}, v.figure) for v in measured])  # type: ignore[misc]  # fmt: skip
    based = [v for v in verdicts if v.baseline is not None]
    family("assay_check_baseline", "The baseline the figure was judged against (label unit).",
           [({**ident(v), "unit": v.unit}, v.baseline) for v in based])  # type: ignore[misc]  # fmt: skip
    rated = [v for v in verdicts if v.ratio is not None and math.isfinite(v.ratio)]
    family("assay_check_ratio", "Figure against baseline as goodness: below 1 is worse.",
           [(ident(v), v.ratio) for v in rated])  # type: ignore[misc]  # fmt: skip
    grades = sorted(node_grades(verdicts).items())
    family("assay_check_node_verdict", "A node's worst check: 0 PASS, 1 WARN, 2 FAIL.",
           [({"node": n}, GRADE_VALUE[g]) for n, g in grades])  # fmt: skip
    codes = ", ".join(f"{v} {k}" for k, v in EXIT_CODE.items())
    family("assay_check_exit_status", f"The exit status of assay check: {codes}.",
           [({}, exit_code(verdicts))])  # fmt: skip
    family("assay_check_timestamp_seconds", "When the check ended, Unix time.", [({}, timestamp)])
    family("assay_check_info", "The run the verdicts come from.",
           [({"run_id": run_id, "suite": suite, "level": level or ""}, 1)])  # fmt: skip
    out.append("# EOF")
    return "\n".join(line.replace("{}", "") for line in out) + "\n"
