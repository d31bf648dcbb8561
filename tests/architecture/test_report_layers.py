"""The report and analysis layers read a vocabulary, never the stages that make samples."""

from __future__ import annotations

import ast
from pathlib import Path

from assay import vocab
from sourcetree import nodes

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"
# report/ may use analysis, model, store (to load a run), units, vocab, errors; never how
# samples were made.
FORBIDDEN = {
    "report": ("assay.storage", "assay.parsers", "assay.probes", "assay.drivers", "assay.fio",
               "assay.launch", "assay.plan", "assay.cli"),
    "analysis": ("assay.report", "assay.storage", "assay.parsers", "assay.probes",
                 "assay.drivers", "assay.launch", "assay.cli", "assay.store"),
}  # fmt: skip


def imports_of(path: Path) -> set[str]:
    """Modules a file imports, relative imports resolved (``from .x`` in report/ is
    ``assay.report.x``)."""
    package = ".".join(("assay", *path.parent.relative_to(SRC).parts))
    found = set()
    for node in nodes(path):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            found.add(f"{base}.{node.module}" if node.module else base)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_report_and_analysis_import_no_earlier_stage():
    bad = []
    for package, forbidden in FORBIDDEN.items():
        for path in sorted((SRC / package).rglob("*.py")):
            for module in imports_of(path):
                if module.startswith(forbidden):
                    bad.append(f"{path.relative_to(SRC)} imports {module}")
    assert bad == []


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """A chain of imports that comes back to its start, or None (depth-first search)."""
    done: set[str] = set()

    def visit(node: str, stack: tuple[str, ...]) -> list[str] | None:
        if node in stack:
            return [*stack, node]
        if node in done:
            return None
        for nxt in sorted(graph.get(node, ())):
            if found := visit(nxt, (*stack, node)):
                return found
        done.add(node)
        return None

    for node in sorted(graph):
        if found := visit(node, ()):
            return found
    return None


def test_find_circle_finds_one():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None


def test_no_import_circle_in_report_or_analysis():
    for package in ("report", "analysis"):
        graph = {
            ".".join(("assay", *path.relative_to(SRC).with_suffix("").parts)): {
                m for m in imports_of(path) if m.startswith(f"assay.{package}.")
            }
            for path in (SRC / package).rglob("*.py")
            if path.stem != "__init__"
        }
        assert find_circle(graph) is None
    # table.py is the base of the report: it imports no other report module
    assert not [m for m in imports_of(SRC / "report" / "table.py") if m.startswith("assay.report")]


def test_the_vocabulary_matches_the_stages_that_write_it():
    from assay.fio.workloads import NAMES
    from assay.parsers.fio import ALL_CLIENTS

    assert vocab.STORAGE_WORKLOADS == NAMES
    assert vocab.ALL_CLIENTS == ALL_CLIENTS
