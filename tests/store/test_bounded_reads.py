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

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"

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


# Where a plain read is right: the module, why, and the code it may read with (a pattern the
# line must match). Line by line, not module by module: a module excused wholesale for one
# read of the package hid its reads of the store (the probe cache's binary and digest record,
# read plainly by ``toolchain/build.py``: a FIFO planted there hung every run).
PLAIN_READS = {
    "inputfile.py": ("the reader itself", r""),
    "system/_context.py": ("files of /proc and /sys (or a captured tree of them)",
                           r"self\.path\(absolute\)\.read_text\("),
    "store/owner.py": ("/proc/<pid>/stat and the boot id (``_read``)", r"open\(path\) as f"),
    "drivers/fio/clients.py": ("/proc/<pid>/stat and cmdline", r'Path\(f"/proc/'),
    "launch/guard.py": ("/proc/<pid>/stat, and the guard's own pipe",
                              r'open\(f"/proc/|os\.fdopen\(r, "rb"\)'),
    "toolchain/build.py": ("the probes' C sources in the package",
                           r"(source|header)\.read_bytes\(\)"),
    "store/recover.py": ("a lock's descriptor (``safefile.open_existing``), never read",
                         r'os\.fdopen\(fd, "rb"\) as lock'),
    "store/safefile.py": ("a descriptor for a lock, never read (``open_existing``)",
                          r"os\.open\(path, os\.O_RDONLY \| os\.O_NONBLOCK \| NOFOLLOW\)"),
    "suite/loader.py": ("the built-in suites in the package", r"entry\.read_text\(\)"),
    "system/clock.py": ("a table in the package", r'resources\.files\("assay"\)'),
    "system/flopstable.py": ("a table in the package", r'resources\.files\("assay"\)'),
}  # fmt: skip

# Every way of reading a file: ``open`` in any form but for writing (a mode of w, a or x),
# ``Path.read_*``/``Path.open``, ``io``/``os`` opens, and the loaders that take a file.
READS = re.compile(
    r"\.read_text\(|\.read_bytes\(|(?<![\w.])(io\.|codecs\.|gzip\.)?open\((?![^)]*[\"'][wax])"
    r"|os\.fdopen\([^)]*[\"']r|(?<!os)\.open\((?![^)]*[\"'][wax])|os\.open\([^)]*O_RDONLY"
    r"|json\.load\(|tomllib\.loads?\(|np\.(fromfile|load|loadtxt)\(|pickle\.load\("
    r"|mmap\.mmap\((?!-1)"
)


def test_no_module_opens_a_file_to_read_it_but_the_reader():
    """Every read of a file goes through ``assay.inputfile``; the exceptions are files of the
    kernel (/proc) and assay's own package, each allowed line by line with why."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        _, allowed = PLAIN_READS.get(rel, ("", None))
        if allowed == "":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if code.lstrip().startswith(('"', "'", "``")) or not READS.search(code):
                continue
            if allowed is None or not re.search(allowed, code):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "files read without assay.inputfile:\n" + "\n".join(found)


def test_the_scan_finds_the_reads_it_is_for():
    """The scan itself: the forms of a plain read it must catch, and the writes it must not."""
    reads = ['with open(path, "rb") as f:', "text = p.read_text()", "open(p, encoding='utf-8')",
             'open(p, "r", errors="replace")', "f = io.open(p)", 'os.fdopen(fd, "rb")',
             'with path.open(mode="r") as f:', "os.open(p, os.O_RDONLY)", "np.load(p)",
             "with open(record) as f:"]  # fmt: skip
    writes = ['with open(log, "wb") as out:', 'open(output, "w")', 'os.fdopen(fd, "w")',
              'path.open("a")', "os.open(tmp, os.O_WRONLY | os.O_CREAT)"]  # fmt: skip
    assert [r for r in reads if not READS.search(r)] == []
    assert [w for w in writes if READS.search(w)] == []


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
