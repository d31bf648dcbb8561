"""``assay check``'s verdicts as tables (terminal, Markdown, HTML) and as its JSON document.

* the grid: a row per node, a column per check, each cell the grade and the ratio to the
  baseline; nodes and checks worst first, so the failing corner is at the top left;
* the node verdicts that are not PASS (all of them with ``everything``): figure, baseline,
  margin, the noise and the test behind it, what it was judged against, the retest;
* the links, worst first.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay.analysis.health import WORST_FIRST, Verdict, exit_code, worst, worst_first
from assay.report.table import Table

JSON_SCHEMA = "assay-check"
JSON_SCHEMA_VERSION = 1
DETAIL_COLUMNS = ["node", "check", "verdict", "figure", "baseline", "margin", "noise", "against",
                  "retest / note"]  # fmt: skip


def margin_text(v: Verdict) -> str:
    m = v.margin
    return "—" if m is None or not math.isfinite(m) else f"{100 * m:+.1f}%"


def cell(v: Verdict) -> str:
    """A grid cell: "PASS", "WARN 0.93", "FAIL 0.27" (the ratio to the baseline)."""
    if v.ratio is None or not math.isfinite(v.ratio) or v.grade == "PASS":
        return v.grade
    return f"{v.grade} {v.ratio:.2f}"


def _order_key(vs: list[Verdict]) -> tuple:
    ratios = [v.ratio for v in vs if v.ratio is not None and math.isfinite(v.ratio)]
    return (WORST_FIRST.index(worst(vs)), min(ratios, default=math.inf))


def column(v: Verdict) -> str:
    """The grid's column of a check: the inventory's facts share one."""
    return "inventory" if v.metric.startswith("inventory.") else v.check


def grid_table(verdicts: Iterable[Verdict], title: str = "Verdicts: nodes x checks") -> Table:
    """Nodes x checks, worst first (see the module docstring)."""
    nodes: dict[str, list[Verdict]] = defaultdict(list)
    checks: dict[str, list[Verdict]] = defaultdict(list)
    cells: dict[tuple[str, str], list[Verdict]] = defaultdict(list)
    for v in verdicts:
        if v.kind == "node":
            nodes[v.subject].append(v)
            checks[column(v)].append(v)
            cells[(v.subject, column(v))].append(v)
    cols = sorted(checks, key=lambda c: (*_order_key(checks[c]), c))
    rows = []
    for node in sorted(nodes, key=lambda n: (*_order_key(nodes[n]), n)):
        row = [node, worst(nodes[node])]
        for c in cols:
            here = worst_first(cells.get((node, c), []))
            row.append(cell(here[0]) if here else "—")
        rows.append(row)
    notes = [
        "Each cell: the grade, and below PASS the ratio to the baseline (< 1 worse, whatever the "
        "metric's direction); inventory: its worst fact. A node's verdict is its worst check; "
        "links are judged below."
    ]
    return Table("check-grid", title, ["node", "verdict", *cols], rows, notes)


def detail_rows(verdicts: Iterable[Verdict]) -> list[list[str]]:
    out = []
    for v in worst_first(verdicts):
        noise = v.noise + (f" ({v.test})" if v.test else "")
        extra = "; ".join(x for x in (v.retest, v.note) if x)
        out.append([v.subject, v.check, v.grade, v.shown, v.expected, margin_text(v), noise,
                    v.against, extra])  # fmt: skip
    return out


def detail_table(verdicts: Iterable[Verdict], everything: bool = False) -> Table | None:
    node = [v for v in verdicts if v.kind == "node"]
    shown = node if everything else [v for v in node if v.grade != "PASS"]
    if not shown:
        return None
    passed = len(node) - len(shown)
    title = "Node checks" if everything else "Node checks that did not pass"
    notes = [] if everything else [f"{passed} other node checks passed (--json lists them all)."]
    notes.append(
        "margin: the ratio to the baseline minus 1. noise: beyond or within the noise by the "
        "test named (Mann-Whitney U / Welch's t against a reference, the robust z-score against "
        "the peers' median); exact: a fact, not a measurement."
    )
    return Table("check-nodes", title, DETAIL_COLUMNS, detail_rows(shown), notes)


def links_table(verdicts: Iterable[Verdict], everything: bool = False) -> Table | None:
    links = [v for v in verdicts if v.kind == "link"]
    if not links:
        return None
    shown = links if everything else [v for v in links if v.grade != "PASS"]
    notes = [f"{len(links)} links judged; {len(links) - len(shown)} not listed passed."] if (
        not everything
    ) else []  # fmt: skip
    notes.append(
        "A single slow link drains no node (which end is at fault cannot be told from it); a "
        "node whose every link to healthy nodes fails does (its 'links' check above)."
    )
    if not shown:
        shown = []
    cols = ["link", *DETAIL_COLUMNS[1:]]
    return Table("check-links", "Links", cols, detail_rows(shown), notes)


def verdict_tables(verdicts: list[Verdict], everything: bool = False) -> list[Table]:
    tables = [grid_table(verdicts)]
    for t in (detail_table(verdicts, everything), links_table(verdicts, everything)):
        if t is not None:
            tables.append(t)
    return tables


def summary_line(verdicts: list[Verdict]) -> str:
    """One line: how many nodes pass, warn, fail; links that fail."""
    per_node: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        if v.kind == "node":
            per_node[v.subject].append(v)
    grades = {n: worst(vs) for n, vs in per_node.items()}
    parts = []
    for g in ("PASS", "WARN", "FAIL"):
        names = sorted(n for n, x in grades.items() if x == g)
        if names:
            parts.append(f"{len(names)} {g}" + (f" ({', '.join(names)})" if g != "PASS" else ""))
    bad_links = sorted({v.subject for v in verdicts if v.kind == "link" and v.grade == "FAIL"})
    line = f"{len(grades)} nodes: " + ", ".join(parts)
    if bad_links:
        line += f"; failing links: {', '.join(bad_links)}"
    return line + f"; exit status {exit_code(verdicts)}"


def stored_verdicts(run_dir: Path) -> list[Verdict] | None:
    """The verdicts ``assay check`` kept beside a run (``check.json``), for the run's report;
    None when it was not checked (or the file cannot be read: the report goes on without)."""
    try:
        doc = json.loads((run_dir / "check.json").read_text())
        if doc.get("schema") != JSON_SCHEMA:
            return None
        fields = {f.name for f in dataclasses.fields(Verdict)}
        return [Verdict(**{k: v for k, v in d.items() if k in fields}) for d in doc["verdicts"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def check_document(
    verdicts: list[Verdict],
    *,
    run_id: str,
    suite: str,
    level: int | None,
    against: dict[str, str],
    notes: list[str],
    retest_run: str | None,
    actions: list[dict[str, Any]],
) -> dict[str, Any]:
    """The JSON document of ``assay check --json`` (and ``check.json`` beside the run)."""
    return {
        "schema": JSON_SCHEMA,
        "schema_version": JSON_SCHEMA_VERSION,
        "run_id": run_id,
        "retest_run_id": retest_run,
        "suite": suite,
        "level": level,
        "verdict": worst(verdicts),
        "exit_status": exit_code(verdicts),
        "against": against,
        "notes": notes,
        "actions": actions,
        "verdicts": [v.to_dict() for v in worst_first(verdicts)],
    }
