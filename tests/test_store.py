import json
import os
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from assay.errors import NotFoundError
from assay.model import JobResult, Sample, Stats, System
from assay.store import Index, RunStore, recover
from assay.store.owner import Owner, register


def _make_run(store: RunStore, n_jobs: int = 2):
    w = store.create(suite="t", suite_text='name = "t"\n', system=System(hostname="h"), argv=["x"])
    for i in range(n_jobs):
        s = Sample.make(
            "p2p",
            "p2p.latency",
            1e-6 * (i + 1),
            {"size": i, "mpi": "openmpi"},
            Stats(n=10, min=1e-6, max=2e-6, mean=1.5e-6),
        )
        w.record(JobResult(job_id=f"00{i}", status="ok", exit_code=0, wall_time=1.0, argv=[]), [s])
    return w


def test_run_round_trips(tmp_path: Path):
    store = RunStore(tmp_path)
    w = _make_run(store)
    w.finish("complete")
    run = store.load()
    assert run.info.status == "complete" and run.system.hostname == "h"
    assert [s.value for s in run.samples] == [1e-6, 2e-6]
    assert run.samples[0].stats == Stats(n=10, min=1e-6, max=2e-6, mean=1.5e-6)
    assert run.samples[1].job_id == "001" and run.samples[1].run_id == run.info.run_id
    assert len(run.results) == 2


def test_a_line_cut_by_a_kill_is_skipped_and_the_rest_kept(tmp_path: Path):
    store = RunStore(tmp_path)
    w = _make_run(store)
    with open(w.path / "samples.jsonl", "a") as f:
        f.write('{"probe": "p2p", "metric": "p2p.lat')  # no newline: killed mid-write
    run = store.load()
    assert len(run.samples) == 2 and run.info.status == "running"


def test_resolve_by_prefix_latest_and_offset(tmp_path: Path):
    store = RunStore(tmp_path)
    with pytest.raises(NotFoundError, match="no runs yet"):
        store.resolve(None)
    a = _make_run(store).info.run_id
    b = _make_run(store).info.run_id
    assert store.resolve(None) == b and store.resolve("-1") == a
    assert store.resolve(a) == a
    with pytest.raises(NotFoundError):
        store.resolve("nope")


def test_index_syncs_and_rebuilds_from_the_run_directories(tmp_path: Path):
    store = RunStore(tmp_path)
    w = _make_run(store)
    index = Index(tmp_path / "assay.db")
    assert index.sync(store) == 1
    assert index.sync(store) == 0  # unchanged: nothing re-read
    assert index.runs()[0]["n_samples"] == 2
    w.finish("complete")
    assert index.sync(store) == 1
    assert index.runs()[0]["status"] == "complete"
    hist = index.history("p2p.latency", {"size": 1})
    assert [h["value"] for h in hist] == [2e-6]
    index.close()
    (tmp_path / "assay.db").unlink()
    index = Index(tmp_path / "assay.db")
    index.sync(store, rebuild=True)
    assert len(index.history("p2p.latency")) == 2
    assert json.loads(json.dumps(index.runs()))[0]["hostname"] == "h"


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _own_by(store: RunStore, run_id: str, owner: Owner) -> None:
    register(store.home, run_id, owner)


def test_a_run_whose_assay_died_is_closed_on_the_next_open(tmp_path: Path):
    store = RunStore(tmp_path)
    w = _make_run(store, n_jobs=1)  # job 000 finished and is recorded
    info = json.loads((w.path / "run.json").read_text())
    assert info["owner"]["pid"] == os.getpid() and info["owner"]["boot_id"]
    assert recover(store.home) == []  # its owner (this process) lives: left alone
    # job 001 started and wrote one sample; the kill came before its record
    (w.path / "jobs" / "001").mkdir(parents=True)
    (w.path / "jobs" / "001" / "job.json").write_text('{"resolved_argv": ["mpirun", "p2p"]}')
    with open(w.path / "samples.jsonl", "a") as f:
        f.write(json.dumps({**Sample.make("p2p", "p2p.latency", 3e-6).to_dict(),
                            "job_id": "001"}) + "\n")  # fmt: skip
    (w.path / "jobs" / "002").mkdir()  # and job 002 was being built: no job.json yet
    me = Owner.current()
    _own_by(store, w.info.run_id, Owner(_dead_pid(), me.host, me.boot_id, 1))
    [message] = recover(store.home)
    assert w.info.run_id in message and "cut short: 001, 002" in message
    run = store.load()
    assert run.info.status == "interrupted" and run.info.owner is None and run.info.finished
    assert "stopped without finishing" in run.info.notes[-1]
    assert [(r.job_id, r.status, r.n_samples) for r in run.results] == [
        ("000", "ok", 0),  # (_make_run leaves n_samples unset)
        ("001", "interrupted", 1),
        ("002", "interrupted", 0),
    ]
    assert "cut short" in run.results[1].reason and len(run.samples) == 2
    assert run.results[1].argv == ["mpirun", "p2p"]
    assert recover(store.home) == []  # done once
    assert not (tmp_path / "live" / f"{run.info.run_id}.json").exists()


def test_a_pid_reused_or_a_reboot_is_not_taken_for_the_owner(tmp_path: Path):
    me = Owner.current()
    assert me.alive() is True
    assert Owner(me.pid, me.host, me.boot_id, (me.start or 0) + 1).alive() is False  # reused
    assert Owner(me.pid, me.host, "another-boot", me.start).alive() is False
    assert Owner(me.pid, "elsewhere", me.boot_id, me.start).alive() is None  # cannot tell
    store = RunStore(tmp_path)
    w = _make_run(store, n_jobs=1)
    _own_by(store, w.info.run_id, Owner(_dead_pid(), "elsewhere", "x", 1))
    assert recover(store.home) == [] and store.load().info.status == "running"


def test_a_finished_or_released_run_leaves_no_live_entry(tmp_path: Path):
    store = RunStore(tmp_path)
    w = _make_run(store)
    assert (tmp_path / "live" / f"{w.info.run_id}.json").exists()
    assert (w.path / ".reserve").stat().st_size > 0  # room for the last records
    w.finish("complete")
    assert list((tmp_path / "live").iterdir()) == [] and not (w.path / ".reserve").exists()
    w2 = _make_run(store)
    w2.release()  # handed to something that outlives this process: stays running
    assert list((tmp_path / "live").iterdir()) == []
    assert recover(store.home) == [] and store.load(w2.info.run_id).info.status == "running"


def test_other_live_runs_are_seen(tmp_path: Path):
    store = RunStore(tmp_path)
    a, b = _make_run(store), _make_run(store)
    assert [rid for rid, _ in a.others_running()] == [b.info.run_id]
    imp = store.create(suite="i", suite_text="", system=System(), argv=[], source="import:osu")
    assert [rid for rid, _ in a.others_running()] == [b.info.run_id]  # an import measures nothing
    imp.finish("complete")
    b.finish("complete")
    assert a.others_running() == []


@pytest.mark.parametrize("text", ["{not json", "[]", "", '{"run_id": 3, "n_jobs": "x"}'])
def test_a_corrupt_run_json_is_skipped_and_named(tmp_path: Path, text: str):
    store = RunStore(tmp_path)
    good = _make_run(store)
    good.finish("complete")
    bad = _make_run(store)
    bad.finish("complete")
    (bad.path / "run.json").write_text(text)
    index = Index(tmp_path / "assay.db")
    index.sync(store, rebuild=True)
    ids = [r["run_id"] for r in index.runs()]
    if text.startswith('{"run_id": 3'):  # readable: indexed with what it holds
        assert len(ids) == 2
    else:
        assert ids == [good.info.run_id]
        assert [s.split(":")[0] for s in index.skipped] == [bad.info.run_id]
    index.close()


def test_a_busy_index_is_waited_for(tmp_path: Path):
    store = RunStore(tmp_path)
    _make_run(store).finish("complete")
    blocker = sqlite3.connect(tmp_path / "assay.db", isolation_level=None, check_same_thread=False)
    Index(tmp_path / "assay.db").close()
    blocker.execute("BEGIN IMMEDIATE")  # another assay writing the index
    timer = threading.Timer(1.0, blocker.rollback)
    timer.start()
    index = Index(tmp_path / "assay.db")
    assert index.sync(store) == 1  # waited ~1 s for the writer, then indexed
    timer.join()
    index.close()
