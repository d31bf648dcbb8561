import json
import os
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from assay.errors import NotFoundError, StoreError
from assay.model import JobResult, Sample, Stats, System
from assay.store import Index, RunStore, recover
from assay.store.owner import Owner, register
from conftest import run_cli


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


DAMAGED_RUN_JSON = {
    "empty": "",
    "not JSON": "{not json",
    "not UTF-8": b'{"run_id": "\xff"}',
    "a list": "[]",
    "a number": "3",
    "missing keys": '{"run_id": "x"}',
    "wrong types": '{"run_id": 3, "created": "c", "suite": "s", "n_jobs": "x"}',
    "status unknown": '{"run_id": "r", "created": "c", "suite": "s", "status": 7}',
    # an object is unhashable: `in` a set of statuses raised TypeError (issue 28)
    "status an object": '{"run_id": "r", "created": "c", "suite": "s", "status": {"a": 1}}',
    "notes not a list": '{"run_id": "r", "created": "c", "suite": "s", "notes": "x"}',
    "slurm not an object": '{"run_id": "r", "created": "c", "suite": "s", "slurm": [1]}',
    "NaN": '{"run_id": "r", "created": "c", "suite": "s", "n_jobs": NaN}',
}


@pytest.mark.parametrize("form", list(DAMAGED_RUN_JSON))
def test_a_damaged_run_json_is_skipped_by_the_index_and_named_by_load(tmp_path: Path, form: str):
    """One reader of run.json (assay.store.records.read_run_info) for loading, the index and
    recovery: every damaged form is a StoreError naming the file and what is wrong, never a
    traceback, and the index lists the other runs and names the damaged one."""
    store = RunStore(tmp_path)
    good = _make_run(store)
    good.finish("complete")
    bad = _make_run(store)
    bad.finish("complete")
    text = DAMAGED_RUN_JSON[form]
    path = bad.path / "run.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    index = Index(tmp_path / "assay.db")
    index.sync(store, rebuild=True)
    assert [r["run_id"] for r in index.runs()] == [good.info.run_id]
    assert [s.split(":")[0] for s in index.skipped] == [bad.info.run_id]
    index.close()
    with pytest.raises(StoreError, match=r"run\.json cannot be read: ") as err:
        store.load(bad.info.run_id)
    assert str(path) in str(err.value) and "intact" in str(err.value)


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


# -- the index is disposable: made again whenever it is unreadable or inconsistent --------------


def _indexed_store(tmp_path: Path) -> tuple[RunStore, list[str]]:
    store = RunStore(tmp_path)
    ids = []
    for _ in range(3):
        w = _make_run(store)
        w.finish("complete")
        ids.append(w.info.run_id)
    index = Index(tmp_path / "assay.db")
    index.sync(store)
    index.close()  # as the writer's process would: nothing here holds the file open
    return store, ids


def _garbage(db: Path) -> None:
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    db.write_bytes(b"this is not an SQLite database\n" * 200)


def _cut_pages(db: Path) -> None:
    """A database whose pages after the first are garbage ('database disk image is
    malformed' once a query reaches them)."""
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(db.read_bytes())
    for i in range(4096, len(data), 7):
        data[i] = 0xA5
    db.write_bytes(bytes(data))


def _drop(table: str):
    def damage(db: Path) -> None:
        con = sqlite3.connect(db)
        con.execute(f"DROP TABLE {table}")
        con.commit()
        con.close()

    return damage


def _delete_samples(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("DELETE FROM samples")
    con.commit()
    con.close()


def _old_schema(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE runs DROP COLUMN damage")
    con.execute("PRAGMA user_version = 0")
    con.commit()
    con.close()


def _cell(sql: str):
    """A JSON cell of the index made into something the index never writes (issue 28: a
    traceback in runs or history)."""

    def damage(db: Path) -> None:
        con = sqlite3.connect(db)
        con.execute(sql)
        con.commit()
        con.close()

    return damage


INDEX_DAMAGE = {
    "a params cell not JSON": _cell("UPDATE samples SET params = '{not json'"),
    "a params cell a list": _cell("UPDATE samples SET params = '[1]'"),
    "a stats cell a number": _cell("UPDATE samples SET stats = '3'"),
    "a damage cell an object": _cell("UPDATE runs SET damage = '{\"a\": 1}'"),
    "not a database": _garbage,
    "malformed pages": _cut_pages,
    "samples table dropped": _drop("samples"),
    "runs table dropped": _drop("runs"),
    "samples deleted": _delete_samples,
    "older schema": _old_schema,
}


@pytest.mark.parametrize("form", list(INDEX_DAMAGE))
def test_an_unreadable_or_inconsistent_index_is_rebuilt_and_says_so(tmp_path: Path, form: str):
    store, ids = _indexed_store(tmp_path)
    INDEX_DAMAGE[form](tmp_path / "assay.db")
    index = Index(tmp_path / "assay.db")
    index.sync(store)
    assert [r["run_id"] for r in index.runs()] == ids
    assert len(index.history("p2p.latency")) == 6  # runs and history agree
    assert index.rebuilt  # said, with why
    index.close()
    again = Index(tmp_path / "assay.db")
    again.sync(store)
    assert again.rebuilt is None  # once: the index made again is whole
    again.close()


@pytest.mark.parametrize("form", ["not a database", "samples table dropped"])
def test_runs_and_history_rebuild_a_damaged_index(assay_home: Path, form: str):
    _, ids = _indexed_store(assay_home)
    INDEX_DAMAGE[form](assay_home / "assay.db")
    # Processes, as a user's commands are: in the test's own process a connection to the file
    # left open anywhere (SQLite shares a file's WAL index within a process) hid the damage.
    hist = run_cli("history", "p2p.latency", home=assay_home, process=True)
    assert hist.returncode == 0 and ids[-1] in hist.stdout, hist.stderr
    assert " ".join(hist.stderr.split()).count("was rebuilt from the run directories") == 1
    INDEX_DAMAGE[form](assay_home / "assay.db")
    for args in (["runs", "--rebuild"], ["runs"]):
        proc = run_cli(*args, home=assay_home, process=True)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert all(i in proc.stdout for i in ids)


# -- run ids ------------------------------------------------------------------------------------


def test_run_ids_made_in_one_millisecond_differ():
    from datetime import UTC, datetime

    from assay.store.rundir import new_run_id

    now = datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC)
    ids = {new_run_id(now) for _ in range(5000)}
    # 24 random bits: 5,000 draws collide 0.75 times on average (a collision is drawn again
    # by create); 10 or more is beyond chance (about 1e-8). One random byte gave at most 256.
    assert len(ids) >= 4990
    assert all(i.startswith("20260102-030405-678") for i in ids)
    assert (
        sorted([new_run_id(datetime(2026, 1, 2, 3, 4, 5, 679_000, tzinfo=UTC)), *ids])[-1][:19]
        == "20260102-030405-679"
    )  # still sorted by creation time


def test_a_run_id_taken_meanwhile_is_drawn_again(tmp_path: Path, monkeypatch):
    from assay.store import rundir

    store = RunStore(tmp_path)
    first = _make_run(store).info.run_id
    drawn = iter([first, first, "20990101-000000-000abcdef"])
    monkeypatch.setattr(rundir, "new_run_id", lambda now=None: next(drawn))
    second = _make_run(store)
    assert second.info.run_id == "20990101-000000-000abcdef"
    assert store.resolve("20990101") == second.info.run_id  # prefixes still resolve


CREATOR = """
import sys
from pathlib import Path
from assay.model import System
from assay.store import RunStore
store = RunStore(Path(sys.argv[1]))
sys.stdin.readline()  # all start together
for _ in range(int(sys.argv[2])):
    w = store.create(suite="c", suite_text="", system=System(), argv=[])
    w.finish("complete")
    print(w.info.run_id, flush=True)
"""


@pytest.mark.slow
def test_concurrent_processes_create_distinct_runs(tmp_path: Path):
    """Real processes creating runs at once: none fails, every id is distinct."""
    import sys

    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CREATOR, str(tmp_path), "150"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for _ in range(8)
    ]  # fmt: skip
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, [err for _, err in outs]
    ids = [line for out, _ in outs for line in out.split()]
    assert len(ids) == 1200 and len(set(ids)) == 1200
    assert sorted(RunStore(tmp_path).run_ids()) == sorted(ids)


def test_a_point_holding_a_number_that_is_not_finite_is_never_written(tmp_path: Path):
    """issue 28: ``[peak] clock_ghz = 1e300`` gave an Rpeak of ``Infinity`` in samples.jsonl,
    which is not JSON (every reader then skipped the line as damaged). The writer keeps such a
    point out and says so in the job's record."""
    store = RunStore(tmp_path)
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    good = Sample.make("dgemm", "compute.dgemm", 1e12, {"rpeak": 2e12})
    bad = Sample.make("dgemm", "compute.dgemm", 1e12, {"rpeak": float("inf")})
    nan = Sample.make("dgemm", "compute.dgemm", 1e12, {"n": 8}, Stats(n=3, mean=float("nan")))
    result = JobResult(job_id="001", status="ok", exit_code=0, wall_time=1.0, argv=[],
                       n_samples=3)  # fmt: skip
    w.record(result, [good, bad, nan])
    w.finish("complete")
    text = (w.path / "samples.jsonl").read_text()
    assert "Infinity" not in text and "NaN" not in text and text.count("\n") == 1
    run = store.load()
    assert [s.params["rpeak"] for s in run.samples] == [2e12] and not run.damage
    assert run.results[0].n_samples == 1 and "2 points holding a number" in run.results[0].reason


def test_a_renamed_param_is_read_under_its_new_name_wherever_it_was_kept(tmp_path: Path):
    """NCCL's in-place/out-of-place was ``placement`` (the word for a node layout) before it
    was ``buffers``: a run written before reads under the new name, in the run, the index and
    its history, and nothing else is renamed (a node layout, an NCCL value not of the two)."""
    store = RunStore(tmp_path)
    w = _make_run(store)
    old = [
        ("gpu.nccl.all_reduce.busbw", {"size": 8, "placement": "in-place"}),
        ("gpu.nccl.all_reduce.busbw", {"size": 16, "placement": "elsewhere"}),
        ("p2p.latency", {"size": 2, "placement": "inter-node"}),
    ]
    with open(w.path / "samples.jsonl", "a") as f:
        for metric, params in old:
            line = {"probe": "nccl", "metric": metric, "value": 1e9, "unit": "B/s",
                    "better": "higher", "params": params, "job_id": "j1"}  # fmt: skip
            f.write(json.dumps(line) + "\n")
    w.finish("complete")
    read = {(s.metric, s.params["size"]): s.params for s in store.load().samples}
    assert read[("gpu.nccl.all_reduce.busbw", 8)] == {"size": 8, "buffers": "in-place"}
    assert read[("gpu.nccl.all_reduce.busbw", 16)] == {"size": 16, "placement": "elsewhere"}
    assert read[("p2p.latency", 2)] == {"size": 2, "placement": "inter-node"}
    index = Index(tmp_path / "assay.db")
    index.sync(store)
    (hit,) = index.history("gpu.nccl.all_reduce.busbw", {"buffers": "in-place"})
    assert hit["params"] == {"size": 8, "buffers": "in-place"}
