"""Every file assay reads back goes through one bounded reader (``assay.inputfile``): a side
file of a run (``check.json``, ``figures.cache.json``, ``live/*.json``, a job's ``job.json``,
the runner's ``runner.json``/``watchdog.txt``/``notes.txt``, ``slurm/topology.txt``) that is
a FIFO, or a link to /dev/zero, is refused at once: before, a FIFO hung every command in
``open`` and /dev/zero was read until memory ran out. Each command here runs within 2 GiB of
address space and a time limit, so the code before the fix fails rather than hangs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assay.model import Job, JobResult, Sample, System
from assay.store import RunStore

SRC = Path(__file__).resolve().parent.parent / "src" / "assay"

LIMITED = """
import resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
sys.exit(subprocess.run([sys.executable, "-m", "assay", *sys.argv[1:]]).returncode)
"""


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ASSAY_HOME": str(home), "COLUMNS": "200"}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC.parent), env.get("PYTHONPATH", "")])
    try:
        return subprocess.run([sys.executable, "-c", LIMITED, *args], capture_output=True,
                              text=True, timeout=90, env=env)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"assay {' '.join(args)} hung (a FIFO opened for reading waits for a writer)")


def _run(home: Path) -> Path:
    store = RunStore(home)
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    s = Sample.make("p2p", "p2p.latency", 1e-6, {"size": 8})
    w.record(JobResult(job_id="1", status="ok", exit_code=0, wall_time=1, argv=[]), [s])
    w.finish("complete")
    return w.path


def _plant(path: Path, form: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    if form == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


FORMS = ["fifo", "dev-zero"]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", ["check.json", "figures.cache.json"])
def test_a_side_file_of_a_run_that_is_no_file_is_not_read(tmp_path: Path, name: str, form: str):
    run = _run(tmp_path)
    _plant(run / name, form)
    proc = _cli(tmp_path, "report", run.name)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "1/1 jobs succeeded; 1 samples" in proc.stdout  # the report of the samples stands
    if name == "check.json":
        assert "check.json not shown: not a regular file" in " ".join(proc.stdout.split())


@pytest.mark.parametrize("form", FORMS)
def test_a_job_json_that_is_no_file_is_not_read(tmp_path: Path, form: str):
    """Opening the store recovers a killed run, reading its jobs' job.json."""
    run = _run(tmp_path)
    killed = RunStore(tmp_path).create(suite="t", suite_text="", system=System(hostname="h"),
                                       argv=[])  # fmt: skip
    killed.save_job(Job(job_id="001-p2p", probe="p2p", argv=["true"]), ["true"])
    _plant(killed.path / "jobs" / "001-p2p" / "job.json", form)
    entry = tmp_path / "live" / f"{killed.info.run_id}.json"
    doc = json.loads(entry.read_text())
    entry.write_text(json.dumps({**doc, "pid": 2**22 + 7, "start": 1}))  # an owner that died
    proc = _cli(tmp_path, "runs")
    assert proc.returncode == 0, proc.stderr
    assert run.name in proc.stdout and killed.info.run_id in proc.stdout
    assert "interrupted" in proc.stdout  # recovered, its job cut short
    assert "Traceback" not in proc.stderr


ENTRIES = """
import resource, signal, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
signal.alarm(30)  # a FIFO's open waits for a writer: killed here, the test fails
from pathlib import Path
from assay.store.owner import entries
for rid, owner, _ in entries(Path(sys.argv[1])):
    print(rid, owner.pid if owner else None)
"""


@pytest.mark.parametrize("form", FORMS)
def test_a_live_entry_that_is_no_file_is_not_read(tmp_path: Path, form: str):
    """The registry of live runs (read by every command that opens the store, and by every
    run for the others running beside it). Locking such an entry for recovery is the store's
    safe writes' concern (``safefile.open_existing``); reading it is this one's."""
    _plant(tmp_path / "live" / "20990101-000000-000-abcdef.json", form)
    (tmp_path / "live" / "20990101-000000-000-bbbbbb.json").write_text('{"pid": 1, "host": "h"}')
    env = {**os.environ, "PYTHONPATH": str(SRC.parent)}
    proc = subprocess.run([sys.executable, "-c", ENTRIES, str(tmp_path)], capture_output=True,
                          text=True, timeout=90, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == [
        "20990101-000000-000-abcdef None",  # unreadable: no owner
        "20990101-000000-000-bbbbbb 1",
    ]


def test_no_module_opens_a_file_to_read_it_but_the_reader():
    """Every read of a file goes through ``assay.inputfile``; the exceptions are files of the
    kernel (/proc) and assay's own package, each listed with why."""
    allowed = {
        "inputfile.py": "the reader itself",
        "system/_context.py": "files of /proc and /sys (or a captured tree of them)",
        "store/owner.py": "/proc/<pid>/stat and the boot id",
        "drivers/fio/clients.py": "/proc/<pid>/stat and cmdline",
        "launch/guard.py": "/proc/<pid>/stat, and the guard's own pipe",
        "toolchain/build.py": "the probes' C sources in the package",
        "suite/loader.py": "the built-in suites in the package",
        "system/clock.py": "a table in the package",
        "system/flopstable.py": "a table in the package",
    }
    reads = re.compile(
        r"\.read_text\(|\.read_bytes\(|\.open\(\)|\.open\(\"rb?\"|(?<![\w.])open\([^)]*\"rb?\"\)"
        r"|(?<![\w.])open\([^,)]*\)|json\.load\(|tomllib\.loads?\(|np\.fromfile\(|mmap\.mmap\((?!-1)"
    )
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in allowed:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if reads.search(code) and not code.lstrip().startswith(('"', "'", "``")):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "files read without assay.inputfile:\n" + "\n".join(found)


class _Launcher:
    """What ``finish`` asks of a batch launcher when the allocation's state is unknown."""

    class caps:
        name = "slurm"


DAMAGED_RUNNER_FILES = {
    "runner.json a list": ("runner.json", b"[1, 2]"),
    "runner.json hosts not text": ("runner.json", b'{"hosts": [1, {"a": 2}]}'),
    "runner.json not JSON": ("runner.json", b'{"hosts": ["n'),
    "watchdog.txt not UTF-8": ("watchdog.txt", b"heartbeat \xff\xfe lost\n"),
    "notes.txt not UTF-8": ("notes.txt", b"a note \xff\n"),
    "runner.json a FIFO": ("runner.json", None),
    "watchdog.txt a FIFO": ("watchdog.txt", None),
    "notes.txt a FIFO": ("notes.txt", None),
}


@pytest.mark.parametrize("form", list(DAMAGED_RUNNER_FILES))
def test_collect_closes_a_run_whose_runner_files_are_damaged(tmp_path: Path, form: str):
    """``assay collect`` (``front.finish``) folds the runner's files into the run: a damaged
    one is left out, the run is closed (a traceback before: ``AttributeError: 'list' object
    has no attribute 'get'``, ``UnicodeDecodeError``; a FIFO hung it)."""
    name, data = DAMAGED_RUNNER_FILES[form]
    store = RunStore(tmp_path)
    w = store.create(suite="s", suite_text="", system=System(hostname="h"), argv=[], n_jobs=1)
    w.info.batch = {"launcher": "slurm", "job_id": "42", "state": "RUNNING", "hosts": ["a"]}
    (w.path / "slurm").mkdir()
    if data is None:
        os.mkfifo(w.path / "slurm" / name)
    else:
        (w.path / "slurm" / name).write_bytes(data)
    w.save_info()
    env = {**os.environ, "PYTHONPATH": str(SRC.parent)}
    code = f"""
import signal, sys
signal.alarm(30)
sys.path.insert(0, {str(Path(__file__).parent)!r})
from pathlib import Path
from assay.store.records import read_run_info
from assay.store.rundir import RunWriter
from assay.run.front import finish
from assay.model import Job
from test_bounded_reads import _Launcher
run_dir = Path({str(w.path)!r})
w = RunWriter(run_dir, read_run_info(run_dir))
out = finish(w, [Job(job_id="001-p2p", probe="p2p", argv=["true"])], None, _Launcher())
print(out[0].status, w.info.batch.get("hosts"), repr(w.info.batch.get("reason", "")))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=90, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    status, rest = proc.stdout.split(" ", 1)
    assert status == "failed" and "['a']" in rest, proc.stdout  # the plan's hosts kept


LONG = "a" * 300  # longer than a file name may be (255): ENAMETOOLONG, not "no such file"


@pytest.mark.parametrize(
    "args",
    [
        ["run", LONG, "--dry-run"],
        ["run", LONG + ".toml", "--dry-run"],
        ["compare", "--ref", LONG + ".toml"],
        ["run", "--vdbench", LONG, "--dry-run"],
    ],
    ids=["suite", "suite.toml", "reference set", "vdbench"],
)
def test_a_name_too_long_for_a_file_is_no_file(tmp_path: Path, args: list[str]):
    """``Path.exists`` raises ENAMETOOLONG (Python 3.11) for a 300-character name: it was a
    traceback where a missing file is a message."""
    from conftest import run_cli

    proc = run_cli(*args, home=tmp_path)
    assert proc.returncode in (2, 3), proc.stderr[-2000:]  # 3: no such thing
    assert "Traceback" not in proc.stderr and "error:" in proc.stderr
