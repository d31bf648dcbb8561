"""The docs name what the code has: every `module.path` or `module.path.name` the README and
docs/ quote in backticks (``launch.contract.Scheduler``, ``assay.run.followup``) is a module of
assay, or a name in one. A rename that leaves a page behind fails here (the backend classes'
rename from Launcher to Scheduler left three such pages; a moved ``fold_file`` two).

A quoted file name (``run.json``, ``figures.cache.json``) is a file, not a module; a JSON
field path (docs/report-json.md's ``run.batch``) is the report's schema, checked there."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import assay

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SCHEMA_PAGES = {"report-json.md"}  # field paths of the JSON report, not modules
FILE_ENDINGS = {"json", "jsonl", "toml", "txt", "md", "bin", "csv", "html", "xml", "log", "prom"}
QUOTED = re.compile(r"`(?:assay\.)?([A-Za-z_]\w*(?:\.\w+)+)(?:\([^`]*\))?`")
PACKAGES = {m.name for m in pkgutil.iter_modules(assay.__path__)}


def quoted_names(text: str) -> list[str]:
    """The backticked dotted names whose first part is one of assay's modules."""
    found = []
    for match in QUOTED.finditer(text):
        parts = match.group(1).split(".")
        if parts[0] in PACKAGES and parts[-1] not in FILE_ENDINGS:
            found.append(match.group(1))
    return found


def resolves(name: str) -> bool:
    """Whether ``name`` is a module of assay, or a name inside one (a class's member too)."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module("assay." + ".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_name_the_docs_quote_is_in_the_code() -> None:
    missing = [
        f"{page.relative_to(ROOT)}: {name}"
        for page in PAGES
        if page.name not in SCHEMA_PAGES
        for name in quoted_names(page.read_text())
        if not resolves(name)
    ]
    assert not missing, "names in the docs that the code does not have:\n" + "\n".join(missing)


def test_the_docs_rule_can_fail() -> None:
    text = "`launch.contract.Launcher`, `assay.run.followup`, `run.json`, `Probe.suite`"
    assert quoted_names(text) == ["launch.contract.Launcher", "run.followup"]
    assert not resolves("launch.contract.Launcher")
    assert resolves("launch.contract.Scheduler") and resolves("run.followup.run_followed")
    assert resolves("analysis.statistics.stats.Folder")
