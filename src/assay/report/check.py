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

from assay.analysis.check.health import WORST_FIRST, Verdict, exit_code, worst, worst_first
from assay.inputfile import read_side
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


# check.json's verdict fields by type, as ``check_document`` writes them: what the report's
# tables use (a grade it sorts by, a ratio it formats) must be what they can use.
_TEXT_FIELDS = ("subject", "check", "metric", "unit", "noise", "test", "against", "shown",
                "expected", "retest", "note", "probe")  # fmt: skip
_NUMBER_FIELDS = ("figure", "baseline", "ratio")
_REQUIRED = ("subject", "kind", "check", "metric", "grade")


def _verdict_problem(d: object) -> str | None:
    if not isinstance(d, dict):
        return "a verdict is not an object"
    missing = [k for k in _REQUIRED if k not in d]
    if missing:
        return f"a verdict has no {missing[0]!r}"
    if d["grade"] not in WORST_FIRST or d["kind"] not in ("node", "link"):
        return f"a verdict's grade or kind is not one assay writes ({d['grade']!r}, {d['kind']!r})"
    for k in _TEXT_FIELDS:
        if type(d.get(k, "")) is not str:
            return f"a verdict's {k!r} is not text"
    for k in _NUMBER_FIELDS:
        v = d.get(k)
        if v is not None and (type(v) not in (int, float) or not math.isfinite(v)):
            return f"a verdict's {k!r} is not a finite number"
    return None


def read_verdicts(run_dir: Path) -> tuple[list[Verdict] | None, str | None]:
    """The verdicts ``assay check`` kept beside a run (``check.json``), for the run's report,
    and why they are not shown when the file is there but damaged (the report goes on
    without them, saying so). (None, None): the run was not checked."""
    path = run_dir / "check.json"
    try:
        doc = json.loads(read_side(path, "check.json"))
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:  # UnreadableFile, JSON, not UTF-8: a ValueError
        return None, f"{path} not shown: {getattr(exc, 'why', None) or exc}"
    if not isinstance(doc, dict) or doc.get("schema") != JSON_SCHEMA:
        return None, f"{path} not shown: not an assay check document"
    listed = doc.get("verdicts")
    why = "its 'verdicts' is not a list" if not isinstance(listed, list) else None
    why = why or next(filter(None, map(_verdict_problem, listed)), None)  # type: ignore[arg-type]
    if why:
        return None, f"{path} not shown: {why}"
    fields = {f.name for f in dataclasses.fields(Verdict)} - {"key"}
    return [Verdict(**{k: v for k, v in d.items() if k in fields}) for d in listed], None


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
