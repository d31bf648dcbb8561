"""The flow goes one way: no import circle, no import from a later stage to an earlier one.

suite → plan → launch → parse → store → derive → report (docs/architecture.md draws it). This
test walks every module's imports (statically, with ``ast``) so the rule holds as the code grows;
a new top-level package or module must be given its stage here, which is the point: a contributor
decides where a change goes before writing it.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from sourcetree import nodes, nodes_of, tree

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"

# Stage of each top-level package or module of ``assay``. A module may import from its own
# stage (other packages of one stage must not import each other both ways: see the circle test)
# or from an earlier one, never from a later one.
STAGE: dict[str, int] = {
    # the vocabulary every stage shares
    "": 0,  # assay/__init__.py
    "errors": 0,
    "units": 0,
    "model": 0,
    "config": 0,
    "textutil": 0,
    "inputfile": 0,
    "vocab": 0,
    "condensed": 0,  # the all-pairs matrix's layout (the probe file's reader and the analysis)
    # what the machine is (every read of /sys, /proc, PATH)
    "system": 1,
    # inputs: suites, the pure fio model, Vdbench files as an input adapter
    "fio": 2,
    "vdbench": 3,
    "suite": 3,
    # how to build and read: toolchains, third-party parsers, probes
    "toolchain": 4,
    "parsers": 4,
    # a probe builds its driver's command line: drivers share the probes' stage (one way only)
    "probes": 5,
    "drivers": 5,
    "plan": 6,
    "launch": 7,
    "store": 8,
    "analysis": 9,
    "references": 9,
    # a run's figures: its stored samples folded and cached (store + analysis, read by report)
    "figures": 9,
    "report": 10,
    # the edges, which drive the whole flow: execute, import, preflight, the Slurm front end and
    # the runner inside an allocation
    "run": 11,
    "cli": 12,
    "__main__": 13,
}


def _modules() -> dict[str, Path]:
    mods = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        mods[".".join(parts)] = path
    return mods


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in nodes(path):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in known and m != name}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _stage_of(module: str) -> int:
    top = _top(module)
    if top.startswith("cli"):  # cli.py and its command modules (cli_*.py)
        top = "cli"
    if top not in STAGE:
        pytest.fail(
            f"{module}: give the top-level '{top}' a stage in "
            "tests/architecture/test_architecture.py"
        )
    return STAGE[top]


MODULES = _modules()


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Each module's imports of assay modules: read when a test asks, not while pytest collects
    (3 s of every collection, the quiet tests' included)."""
    known = set(MODULES)
    return {name: _imports(name, path, known) for name, path in MODULES.items()}


def test_every_module_has_a_stage() -> None:
    for name in MODULES:
        _stage_of(name)


def test_no_import_from_a_later_stage() -> None:
    backwards = [
        f"{a} (stage {_stage_of(a)}) imports {b} (stage {_stage_of(b)})"
        for a, deps in sorted(_graph().items())
        for b in sorted(deps)
        if _stage_of(b) > _stage_of(a)
    ]
    assert not backwards, "imports against the flow:\n" + "\n".join(backwards)


def test_no_import_circle() -> None:
    # Package __init__ files re-export their modules; an edge into an __init__ is an edge into
    # the package, which is what the package-level check below is for.
    modules = {m for m, p in MODULES.items() if p.name != "__init__.py"}
    graph = {m: {d for d in _graph()[m] if d in modules} for m in modules}
    circles = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                circles.append(" -> ".join([*trail[trail.index(dep) :], dep]))
            elif dep not in state:
                visit(dep, [*trail, dep])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_no_two_packages_import_each_other() -> None:
    edges = {(_top(a), _top(b)) for a, deps in _graph().items() for b in deps if _top(a) != _top(b)}
    both = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    assert not both, f"packages importing each other: {both}"


# The rooms of ``analysis`` (the derive stage), by concern, in order: a room imports from its
# own and earlier ranks only, and two rooms of one rank not from each other. Maths first, then
# figures made of figures; compare and the all-pairs matrix both read those; check judges with
# all of them. docs/architecture.md names the same rooms.
ANALYSIS_ROOMS: dict[str, int] = {
    "statistics": 0,
    "derived": 1,
    "compare": 2,
    "matrix": 2,
    "check": 3,
}


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "analysis" else None


def _against_the_rooms(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for a, deps in sorted(graph.items()):
        for b in sorted(deps):
            ra, rb = _room(a), _room(b)
            if ra is None or rb is None or ra == rb:
                continue
            if ANALYSIS_ROOMS[rb] >= ANALYSIS_ROOMS[ra]:
                bad.append(f"{a} ({ra}) imports {b} ({rb})")
    return bad


def test_every_analysis_module_is_in_a_room() -> None:
    rooms = {p.name for p in (SRC / "analysis").iterdir() if (p / "__init__.py").exists()}
    loose = [p.name for p in (SRC / "analysis").glob("*.py") if p.stem != "__init__"]
    assert rooms == set(ANALYSIS_ROOMS), "give each room of analysis/ its rank here (and docs)"
    assert not loose, f"modules of analysis/ outside a room: {loose}"


def test_the_analysis_rooms_import_in_order() -> None:
    bad = _against_the_rooms(_graph())
    assert not bad, "imports against the analysis rooms' order:\n" + "\n".join(bad)


def test_the_rooms_rule_can_fail() -> None:
    back = {"assay.analysis.statistics.stats": {"assay.analysis.derived.derive"}}
    side = {"assay.analysis.matrix.allpairs": {"assay.analysis.compare.verdict"}}
    ok = {"assay.analysis.check.health": {"assay.analysis.statistics.outliers"}}
    assert _against_the_rooms(back) and _against_the_rooms(side)
    assert not _against_the_rooms(ok)


# One meaning per type name: a class name is defined once in src/assay, so a name read in a
# traceback, a docstring or a review says which thing it is. A name beginning with "_" is its
# module's own (the check below holds that no other module imports it), so parsers may each
# have their ``_Reader``. Two public classes may share a name only by an entry here, with why.
SHARED_CLASS_NAMES: dict[str, str] = {}


def _classes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        for node in nodes(path):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(name)
    return found


def _shared_names(classes: dict[str, list[str]]) -> list[str]:
    return [
        f"{cls}: {', '.join(sorted(where))}"
        for cls, where in sorted(classes.items())
        if len(where) > 1 and not cls.startswith("_") and cls not in SHARED_CLASS_NAMES
    ]


def test_each_class_name_is_defined_once() -> None:
    shared = _shared_names(_classes())
    assert not shared, "class names defined more than once (rename one):\n" + "\n".join(shared)
    stale = [cls for cls in SHARED_CLASS_NAMES if len(_classes().get(cls, [])) < 2]
    assert not stale, f"allowed as shared, but defined once or not at all: {stale}"


def test_a_private_class_stays_in_its_module() -> None:
    private = {cls for cls in _classes() if cls.startswith("_")}
    imported = [
        f"{name} imports {alias.name} from {node.module}"
        for name, path in MODULES.items()
        for node in nodes(path)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name in private
    ]
    assert not imported, "private classes imported by another module:\n" + "\n".join(imported)


def test_the_class_name_check_can_fail() -> None:
    classes = {"Spread": ["assay.model", "assay.x"], "_Reader": ["assay.a", "assay.b"]}
    assert _shared_names(classes) == ["Spread: assay.model, assay.x"]


def test_the_rule_can_fail() -> None:
    """The checker itself finds a backward import (so the tests above are not vacuous)."""
    assert _stage_of("assay.report.table") > _stage_of("assay.probes.base")
    fake = {"assay.probes.x": {"assay.report.table"}}
    assert any(_stage_of(b) > _stage_of(a) for a, deps in fake.items() for b in deps)


def test_no_module_over_500_lines_outside_parsers() -> None:
    long = [
        f"{p.relative_to(SRC)}: {n} lines"
        for p in SRC.rglob("*.py")
        if "parsers" not in p.parts and (n := len(p.read_text().splitlines())) > 500
    ]
    assert not long, "modules over ~500 lines:\n" + "\n".join(long)


# A function fits a screen or two: a parser's at most 80 lines (the scan and the samples it
# builds apart, the tables as data: issue 29), any other at most 120, the CLI's commands aside
# (their options are typer declarations, one parameter each).
PARSER_LINES, OTHER_LINES = 80, 120


def _long_functions(path: Path, walked: Sequence[ast.AST]) -> list[str]:
    limit = PARSER_LINES if "parsers" in path.parts else OTHER_LINES
    if "cli" in path.parts:
        return []
    return [
        f"{path}:{node.lineno} {node.name}: {n} lines (at most {limit})"
        for node in walked
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (n := node.end_lineno - node.lineno + 1) > limit
    ]


def test_every_function_fits_its_limit() -> None:
    long = [f for p in SRC.rglob("*.py") for f in _long_functions(p.relative_to(SRC), nodes(p))]
    assert not long, "functions too long:\n" + "\n".join(long)


def test_the_function_length_check_can_fail() -> None:
    body = nodes_of("def parse(text):\n" + "    x = 1\n" * 80)
    assert _long_functions(Path("parsers/x.py"), body)
    assert not _long_functions(Path("report/x.py"), body)


# The package root holds the ground floor (stage 0) and the entry points, nothing that belongs
# in a stage's folder: at most 8 modules besides the package's own __init__.
ENTRY_POINTS = {"__init__", "__main__"}
ROOT_LIMIT = 8


def test_the_package_root_holds_the_ground_floor_and_entry_points_only() -> None:
    root = sorted(p.stem for p in SRC.glob("*.py") if p.stem != "__init__")
    misplaced = [m for m in root if m not in ENTRY_POINTS and STAGE.get(m) != 0]
    assert not misplaced, (
        f"modules at the package root that belong in a stage's folder: {misplaced} "
        "(give them a package of their stage)"
    )
    assert len(root) <= ROOT_LIMIT, f"{len(root)} modules at the package root: {root}"


def _doc_stages() -> dict[str, int]:
    """The stage table of docs/architecture.md: package -> stage."""
    doc = (SRC.parents[1] / "docs" / "architecture.md").read_text()
    table = doc.split("<!-- stages:", 1)[1].split("\n\n", 1)[0]
    found: dict[str, int] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0][:1].isdigit():
            continue
        stage = int(cells[0].split()[0])
        for name in cells[1].split(","):
            found[name.strip().strip("`").removeprefix("assay.")] = stage
    return found


def test_the_docs_stage_table_is_this_one() -> None:
    documented = {k: v for k, v in STAGE.items() if k not in ("", "__main__")}
    assert _doc_stages() == documented


PROBE_NAMES = {p.stem for p in (SRC / "probes").glob("*.py") if not p.stem.startswith("_")}
PROBE_NAMES -= {"base", "external", "mpi_jobs", "cuda", "hplsize", "__init__"}
# The flow's machinery places, launches and runs any probe alike: it reads what a probe
# declares (its spread, its server), never its name.
MACHINERY = ("launch", "plan", "run", "cli")


def _names_in_comparisons(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for side in [node.left, *node.comparators]:
            elts = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
            found |= {e.value for e in elts if isinstance(e, ast.Constant)}
    return found


def test_no_probe_name_is_tested_by_the_machinery() -> None:
    assert {"p2p", "coll", "fio", "rdma", "stream"} <= PROBE_NAMES
    named = [
        f"{p.relative_to(SRC)}: {sorted(hits)}"
        for package in MACHINERY
        for p in sorted((SRC / package).rglob("*.py"))
        if (hits := _names_in_comparisons(tree(p)) & PROBE_NAMES)
    ]
    assert not named, "probe names tested outside their probe:\n" + "\n".join(named)


def test_the_probe_name_check_can_fail() -> None:
    tree = ast.parse('if job.probe in ("p2p", "coll"):\n    pass\nif job.probe == "fio": pass')
    assert _names_in_comparisons(tree) & PROBE_NAMES == {"p2p", "coll", "fio"}


def test_each_probe_lives_in_the_module_of_its_name() -> None:
    """What lets ``get_probe`` import the one module a job needs (``assay.probes``)."""
    from assay.probes import PROBES

    misplaced = {
        n: type(p).__module__
        for n, p in PROBES.items()
        if type(p).__module__ != f"assay.probes.{n}"
    }
    assert not misplaced, misplaced


def test_getting_a_probe_imports_its_module_only() -> None:
    code = (
        "import sys; from assay.probes import get_probe; get_probe('stream'); "
        "print(*sorted(m for m in sys.modules if m.startswith(('assay.probes.', 'numpy'))))"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC.parent)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=True)  # fmt: skip
    loaded = proc.stdout.split()
    assert "assay.probes.stream" in loaded and "assay.probes.fio" not in loaded, loaded
    assert "numpy" not in loaded, loaded
    # ... and the probe it gave is the registry's, once the whole table is read
    code = (
        "from assay.probes import PROBES, get_probe; p = get_probe('stream'); "
        "print(PROBES['stream'] is p)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=True)  # fmt: skip
    assert proc.stdout.strip() == "True", proc.stdout


# The scheduler backends, each ``assay.launch.<name>`` (a module or a folder), as the registry
# names them: read from its SCHEDULERS table, without importing it.
REGISTRY = "assay.launch.registry"


def _backends() -> set[str]:
    for node in nodes(MODULES[REGISTRY]):
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "SCHEDULERS":
            assert isinstance(node.value, ast.Dict)
            where = [v.value for v in node.value.values if isinstance(v, ast.Constant)]
            return {".".join(w.split(":")[0].split(".")[:3]) for w in where}
    pytest.fail(f"{REGISTRY}: no SCHEDULERS table")


def _docstrings(walked: Sequence[ast.AST]) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in walked
        if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
    }


def _backend_reaches(name: str, walked: Sequence[ast.AST], backends: set[str]) -> set[str]:
    """The backends module ``name`` names from outside them: by an import, or by a string
    constant naming one of their modules (the registry's lines excepted); docstrings are
    words, not loads."""

    def outside(module: str) -> str | None:
        for b in backends:
            if (module == b or module.startswith(b + ".")) and not (
                name == b or name.startswith(b + ".")
            ):
                return b
        return None

    found = {b for m in _imports_of(name, walked) if (b := outside(m))}
    if name != REGISTRY:
        docs = _docstrings(walked)
        for node in walked:
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) in docs:
                    continue
                for word in re.findall(r"assay(?:\.\w+)+", node.value):
                    if b := outside(word):
                        found.add(b)
    return found


def _imports_of(name: str, walked: Sequence[ast.AST]) -> set[str]:
    package = name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in walked:
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_no_module_outside_a_backend_names_it() -> None:
    """The core reaches a scheduler backend through the contract and the registry only."""
    backends = _backends()
    assert {"assay.launch.local", "assay.launch.slurm"} <= backends
    reaching = [
        f"{name}: {sorted(found)}"
        for name, path in sorted(MODULES.items())
        if (found := _backend_reaches(name, nodes(path), backends))
    ]
    assert not reaching, "modules naming a backend past the contract:\n" + "\n".join(reaching)


def test_the_backend_check_can_fail() -> None:
    backends = {"assay.launch.slurm"}
    imported = nodes_of("from assay.launch.slurm.nodes import node_states\n")
    named = nodes_of('import importlib\nimportlib.import_module("assay.launch.slurm.nodes")\n')
    doc = nodes_of('"""See ``assay.launch.slurm.nodes``."""\n')
    assert _backend_reaches("assay.run.x", imported, backends) == backends
    assert _backend_reaches("assay.run.x", named, backends) == backends
    assert _backend_reaches("assay.run.x", doc, backends) == set()
    assert _backend_reaches("assay.launch.slurm.scheduler", imported, backends) == set()
    assert _backend_reaches(REGISTRY, named, backends) == set()


# The core holds no string naming a probe: the flow's machinery, the store, a run's fold and
# the report's generic modules (the order, the formats, the one Table type) read what a probe
# declares (its spread, its suite, its follow-ups), never a name. A report family's module
# shows its probes' figures by name (that is its job), and so do the probes' own modules
# outside the core (``figures/allpairs*``, ``analysis``). Only a whole string equal to a name
# counts: a metric (``p2p.latency``) or a help line that mentions a probe is text, not a test.
CORE = ("launch", "plan", "run", "cli", "store", "report", "figures")
PROBES_OWN = {
    "report": {"memory", "compute", "gpu", "rdma", "mpi", "nccl", "storage", "check",
               "allpairs", "allpairs_large", "allpairs_notes"},
    "figures": {"allpairs", "allpairs_cache", "allpairs_jobs"},
}  # fmt: skip


def _names_in_strings(tree: ast.AST) -> set[str]:
    return {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    } & PROBE_NAMES


def _core_modules() -> list[Path]:
    return [
        p
        for package in CORE
        for p in sorted((SRC / package).rglob("*.py"))
        if not (p.parent == SRC / package and p.stem in PROBES_OWN.get(package, set()))
    ]


def test_no_probe_name_in_a_string_of_the_core() -> None:
    named = [
        f"{p.relative_to(SRC)}: {sorted(hits)}"
        for p in _core_modules()
        if (hits := _names_in_strings(tree(p)))
    ]
    assert not named, "probe names in the core (declare it on the probe):\n" + "\n".join(named)


def test_the_string_check_can_fail_and_reads_the_core() -> None:
    tree = ast.parse('resolve_suite("allpairs")\nKEYS = {"stream": 1, "p2p.latency": 2}')
    assert _names_in_strings(tree) == {"allpairs", "stream"}
    core = {p.relative_to(SRC).as_posix() for p in _core_modules()}
    assert {"run/request.py", "run/runner.py", "report/build.py", "cli/run.py"} <= core
    assert "report/memory.py" not in core and "figures/allpairs.py" not in core
