"""The storage side's packages keep their place in the flow (issue 8): ``assay.fio`` is the pure
fio model, ``assay.vdbench`` an input adapter, ``assay.drivers`` the programs jobs run. Each
imports only what comes before it, none imports another in a circle, and none holds a module
of more than ~400 lines. Read from the source (ast), so a lazy import inside a function counts.
"""

from __future__ import annotations

import ast
from pathlib import Path

import assay
from sourcetree import nodes

SRC = Path(assay.__file__).parent
# what each package may import from assay (its own modules always)
# (assay.inputfile: the bounded read of a file the user names, stage 0 like assay.errors)
ALLOWED = {
    "assay.fio": {"assay.errors", "assay.inputfile"},
    # a Vdbench file becomes a suite (its schema), kept as TOML (the suite writer)
    "assay.vdbench": {
        "assay.errors",
        "assay.inputfile",
        "assay.fio",
        "assay.suite.schema",
        "assay.suite.writer",
    },
    # the inventory driver (assay check) reads its node: the system record and the MPIs found
    "assay.drivers": {
        "assay.errors",
        "assay.inputfile",
        "assay.fio",
        "assay.parsers",
        "assay.analysis",
        "assay.model",
        "assay.system",
        "assay.toolchain",
    },
}
MAX_LINES = 400


def modules(package: str) -> dict[str, Path]:
    root = SRC.joinpath(*package.split(".")[1:])
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(path: Path, name: str) -> set[str]:
    found = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = name.split(".")[: -node.level or None]
                if path.name == "__init__.py":
                    base = name.split(".")[: len(name.split(".")) - node.level + 1]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            found.add(mod)
            found |= {f"{mod}.{a.name}" for a in node.names}  # "from pkg import module"
    return {m for m in found if m == "assay" or m.startswith("assay.")}


def test_each_storage_package_imports_only_earlier_stages():
    bad = []
    for package, allowed in ALLOWED.items():
        for name, path in modules(package).items():
            for mod in imports(path, name):
                ok = mod.startswith(package) or any(
                    mod == a or mod.startswith(a + ".") for a in allowed
                )
                if not ok and not _is_name_of(mod, allowed | {package}):
                    bad.append(f"{name} imports {mod}")
    assert not bad, "\n".join(bad)


def _is_name_of(mod: str, allowed: set[str]) -> bool:
    """``from assay.parsers.fio import parse`` also yields ``assay.parsers.fio.parse``."""
    parent = mod.rpartition(".")[0]
    return any(parent == a or parent.startswith(a + ".") for a in allowed)


def test_no_import_circle_in_the_storage_packages():
    graph: dict[str, set[str]] = {}
    for package in ALLOWED:
        for name, path in modules(package).items():
            graph[name] = imports(path, name)
    names = set(graph)
    edges = {n: {m for m in deps if m in names and m != n} for n, deps in graph.items()}
    # a package's __init__ re-exporting its modules is not a circle with them
    edges = {n: {m for m in deps if not n.startswith(m + ".")} for n, deps in edges.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(edges[node]):
            if state.get(dep) == 1:
                cycles.append(" -> ".join([*stack[stack.index(dep) :], dep]))
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(cycles)


def test_no_storage_module_is_too_long():
    long = [
        f"{name}: {n} lines"
        for package in ALLOWED
        for name, path in modules(package).items()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert not long, "\n".join(long)


def test_the_old_storage_package_is_gone():
    assert not (SRC / "storage").exists()
    users = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if "assay.storage" in p.read_text() or "assay.launch.pair" in p.read_text()
    ]
    assert not users, users
