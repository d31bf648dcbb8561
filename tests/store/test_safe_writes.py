"""Issue 28: nothing is created or overwritten outside the store through a link planted in it
(``assay.store.safefile``). Each test fails on the code before: it wrote through the link."""

import json
import os
from pathlib import Path

import pytest

from assay.model import JobResult, Sample, Stats, System
from assay.store import RunStore, recover
from assay.store.owner import Owner, register
from conftest import run_cli


def _run(home: Path):
    store = RunStore(home)
    w = store.create(suite="t", suite_text='name = "t"\n', system=System(hostname="h"), argv=["x"])
    s = Sample.make("p2p", "p2p.latency", 1e-6, {"size": 8}, Stats(n=3, min=1e-6, max=2e-6))
    w.record(JobResult(job_id="000", status="ok", exit_code=0, wall_time=1.0, argv=[]), [s])
    return w


def test_a_dangling_link_in_live_creates_nothing(tmp_path: Path):
    home = tmp_path / "home"
    w = _run(home)
    w.finish("complete")
    (home / "live").mkdir(exist_ok=True)
    target = tmp_path / "elsewhere" / "created-by-assay"
    target.parent.mkdir()
    (home / "live" / "20260101-000000-000abcdef.json").symlink_to(target)
    recover(home)  # what every command does when it opens the store
    assert not target.exists()


def test_a_link_at_a_temporary_name_is_never_written_through(tmp_path: Path):
    home = tmp_path / "home"
    w = _run(home)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    for name in ("run.json", "figures.cache.json", "system.json"):  # the old fixed names
        (w.path / f".{name}.tmp").symlink_to(victim)
    (home / "live" / f".{w.info.run_id}.tmp").symlink_to(victim)
    register(home, w.info.run_id, Owner.current())
    w.finish("complete")
    proc = run_cli("report", w.info.run_id, "-f", "json", home=home)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert json.loads((w.path / "run.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("name", ["samples.jsonl", "jobs.jsonl"])
def test_a_record_file_that_is_a_link_is_not_appended_to(tmp_path: Path, name: str):
    home = tmp_path / "home"
    w = _run(home)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (w.path / name).unlink()
    (w.path / name).symlink_to(victim)
    s = Sample.make("p2p", "p2p.latency", 1e-6, {"size": 8}, Stats(n=3, min=1e-6, max=2e-6))
    with pytest.raises(Exception, match="cannot write"):
        w.record(JobResult(job_id="001", status="ok", exit_code=0, wall_time=1.0, argv=[]), [s])
    assert victim.read_text() == "precious\n"


def test_safefile_writes_whole_files_and_leaves_no_temporary(tmp_path: Path):
    from assay.store import safefile

    path = tmp_path / "f.json"
    safefile.write_atomic(path, "one\n")
    safefile.write_atomic(path, b"two\n")
    assert path.read_text() == "two\n" and os.listdir(tmp_path) == ["f.json"]
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OSError):
        safefile.open_append(link)
    with pytest.raises(OSError):
        safefile.open_existing(link)
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("name", ["assay.db", "assay.db-wal", "assay.db-journal"])
def test_an_index_that_is_a_link_is_refused(tmp_path: Path, name: str):
    """``sqlite3.connect`` follows a link: an ``assay.db`` (or its journal) linked elsewhere
    made every command create or write the link's target as a database."""
    home = tmp_path / "home"
    w = _run(home)
    w.finish("complete")
    target = tmp_path / "elsewhere" / "written-by-assay"
    target.parent.mkdir()
    (home / name).symlink_to(target)
    proc = run_cli("runs", home=home)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"the index {home / name} is a symbolic link" in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr
    assert not target.exists()  # nothing made through the link
    (home / name).unlink()
    proc = run_cli("runs", home=home)
    assert proc.returncode == 0 and w.info.run_id in proc.stdout
