"""Shared test fixtures: an isolated ASSAY_HOME and a way to run the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

# Tests live in one folder per stage (tests/<stage>/); the helpers some test modules share with
# others (test_report's tables_of, test_native_probes' compile_probe, ...) are imported by
# module name from any of them, as the helpers beside this file are.
for _stage in sorted(Path(__file__).parent.iterdir()):
    if _stage.is_dir() and any(_stage.glob("test_*.py")) and str(_stage) not in sys.path:
        sys.path.append(str(_stage))

import inprocess  # noqa: E402

# An xdist worker starts with COLUMNS=80 in its environment. A console made then keeps 80 columns
# for good, so every command run_cli would run in this process (COLUMNS=200) fell back to a
# fresh interpreter: 0.9 s of CPU each, hundreds of them in `make test-fast`.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)

# Small, fast settings for real runs in tests (the real probes, real MPIs, tiny sizes).
FAST_SETS = [
    "--set", "stream.elements=200000",
    "--set", "stream.ntimes=4",
    "--set", "dgemm.n=256",
    "--set", "dgemm.min_time=0.05",
    "--set", "p2p.max_size=4096",
    "--set", "p2p.iterations=200",
    "--set", "p2p.warmup=10",
    "--set", "p2p.iterations_large=20",
    "--set", "p2p.warmup_large=2",
]  # fmt: skip


def kept_cache(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder for compiled probes, laid out as assay's own cache (``<key>/<probe>``): the
    session's; or, where ASSAY_TEST_PROBE_CACHE names a folder (the Makefile's
    build/probe-cache), ``name`` in it, shared by the target's processes and holding what
    earlier runs compiled too. A key holds the sources with their headers, the flags and the
    compiler's identity, so a changed probe is compiled again and an unchanged one is not (a
    warm fast loop skips nvcc's 28 s of CPU and each worker's C compiles); a clean clone, as
    CI's, starts it empty."""
    root = os.environ.get("ASSAY_TEST_PROBE_CACHE")
    if not root:
        return tmp_path_factory.mktemp(name)
    path = Path(root) / name
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The compiled probes every test's ASSAY_HOME borrows (lend_probes, keep_probes)."""
    return kept_cache(tmp_path_factory, "probes")


def lend_probes(cache: Path, home: Path) -> None:
    """Copy the session's compiled probes into ``home``'s cache before a test. assay's cache is
    keyed by the probe's sources, flags and compiler, so a test gets the very binary it would
    have built, and its digest record with it; compiling is not what these tests test (66
    compiles of about 0.7 s of CPU each in one `make test-fast` without this). The cache's own
    tests build into their own directories."""
    if any(cache.iterdir()):  # not another worker's entry being written (".KEY.PID.part")
        shutil.copytree(cache, home / "cache", dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".*"))  # fmt: skip


def keep_probes(home: Path, cache: Path) -> None:
    """After a test: keep in the session's cache each probe it compiled, whole and verified."""
    for key in sorted(p for p in (home / "cache").glob("*") if p.is_dir()):
        exes = [f for f in key.iterdir() if f.is_file() and "." not in f.name]
        if (cache / key.name).exists() or not exes or not all(_built(f) for f in exes):
            continue
        part = cache / f".{key.name}.{os.getpid()}.part"  # workers may share the cache
        shutil.rmtree(part, ignore_errors=True)
        shutil.copytree(key, part)
        try:
            os.replace(part, cache / key.name)
        except OSError:  # another worker kept the same build first
            shutil.rmtree(part, ignore_errors=True)


def _built(exe: Path) -> bool:
    from assay.errors import AssayError
    from assay.toolchain.build import verified

    try:
        return verified(exe)
    except (AssayError, OSError):  # a test's tampered or half-written cache: not kept
        return False


@pytest.fixture
def assay_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_cache: Path):
    home = tmp_path / "assay-home"
    monkeypatch.setenv("ASSAY_HOME", str(home))
    monkeypatch.setenv("ASSAY_CONFIG", str(tmp_path / "no-config.toml"))
    lend_probes(shared_cache, home)
    yield home
    keep_probes(home, shared_cache)


# Commands that only read and write files under ASSAY_HOME: run_cli runs them inside pytest's
# process (0.35-1 s less per call than a fresh interpreter importing typer, rich and assay).
# Running, collecting, checking and doctor stay separate processes: they install signal
# handlers, start MPI jobs and read the machine, which is what their tests are about.
IN_PROCESS = frozenset({"report", "import", "compare", "runs", "history", "references", "summary",
                        "label", "plan-io"})  # fmt: skip


def run_cli(
    *args: str,
    home: Path,
    timeout: float = 300,
    check: bool = False,
    env: dict[str, str] | None = None,
    process: bool = False,
):
    """Run ``python -m assay ARGS`` as a user would: a read-only command (IN_PROCESS) with only
    ASSAY_* variables set runs in this process, anything else (or with ``process``: a test of
    what another process sees, such as its locks) in a separate one."""
    env = {"ASSAY_HOME": str(home), "COLUMNS": "200", **(env or {})}
    proc = None
    plain_env = all(k.startswith("ASSAY_") or k == "COLUMNS" for k in env)
    if not process and args and args[0] in IN_PROCESS and plain_env:
        proc = inprocess.run(list(args), env)  # None: the consoles differ from a fresh process's
    if proc is None:
        proc = subprocess.run(
            [sys.executable, "-m", "assay", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **env},
            check=False,
        )
    if check and proc.returncode != 0:
        raise AssertionError(f"assay {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")
    return proc


def free_port(address: str) -> int:
    """A TCP port nothing listens on at ``address`` now (the OS's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


def multi_client_suite(tmp_path: Path, hosts: list[str]) -> tuple[Path, Path]:
    """A one-bench suite: fio's randread-8k from every host at once, 0.5 s on 8 MiB files in
    ``tmp_path/target``; returns (suite file, target)."""
    target = tmp_path / "target"
    suite = tmp_path / "mc.toml"
    suite.write_text(
        'name = "mc"\n[[bench]]\nprobe = "fio"\n'
        f'params = {{ workloads = ["randread-8k"], hosts = {json.dumps(hosts)}, '
        f'target = "{target}", runtime = 0.5, ramp_time = 0, size = "8m", iodepth = 4 }}\n'
    )
    return suite, target


# The tests that measure speed or time (a probe's figures, a budget, a timeout, a clock): they
# need the machine to themselves, so `make test` runs them in one process, the others beside
# them at nice 19 (the Makefile). Whole stage folders, then single modules of the other folders.
QUIET_STAGES = frozenset({"run", "probes", "storage", "system"})
QUIET_MODULES = frozenset({
    "report/test_progress", "report/test_summary", "robustness/test_soak_kill",
    "robustness/test_bounds", "robustness/test_injection", "parsers/test_parser_patterns",
    "parsers/test_parser_inputs", "derive/test_references", "derive/test_topology",
    "derive/test_allpairs_matrix", "derive/test_memory_domains", "vocabulary/test_models",
    "inputs/test_vdbench", "inputs/test_vdbench_suite", "launch/test_launch",
    "architecture/test_extension_points",
})  # fmt: skip
# Modules of the quiet stages that read no clock and measure no speed (tests/architecture/
# test_test_layout.py checks the clock): nvcc builds and recorded GPU output, the inventory on
# fake trees, kernel limits, compilers, IOR/mdtest's skip path, check's pure judging.
NOT_QUIET = frozenset({
    "probes/test_gpu", "probes/test_gpu_h100", "probes/test_ior_mdtest_probes",
    "system/test_system", "system/test_fabric", "system/test_toolchain", "run/test_check",
})  # fmt: skip


def is_quiet(path: Path) -> bool:
    """Whether the test module at ``path`` (under tests/) needs the machine to itself."""
    stage, name = path.parent.name, f"{path.parent.name}/{path.stem}"
    return name not in NOT_QUIET and (stage in QUIET_STAGES or name in QUIET_MODULES)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks the tests of the quiet modules; under xdist, puts the heavy modules first.

    Under xdist each module's tests share one worker (the Makefile's ``--dist loadfile``), so a
    module fixture such as test_gpu's nvcc builds or test_check_cli's baseline run is made
    once, not once per worker. A worker takes the next module when it is done with its own,
    in collection order; xdist's own order (most tests first) left test_check_cli's seven
    whole checks (40 s) for one worker at the end while the others stood idle."""
    for item in items:
        if is_quiet(Path(str(item.fspath))):
            item.add_marker(pytest.mark.quiet)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = _heavy_modules_first(items)


def _heavy_modules_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The modules with the most ``slow`` tests (whole runs) first, then those with the most
    tests; each module's tests in their own order (the Makefile turns xdist's order off)."""
    slow: dict[str, int] = {}
    count: dict[str, int] = {}
    for item in items:
        module = str(item.fspath)
        count[module] = count.get(module, 0) + 1
        slow[module] = slow.get(module, 0) + (item.get_closest_marker("slow") is not None)
    return sorted(items, key=lambda i: (-slow[str(i.fspath)], -count[str(i.fspath)], str(i.fspath)))
