import json
from pathlib import Path

import pytest

from assay.errors import NotFoundError
from assay.model import JobResult, Sample, Stats, System
from assay.store import Index, RunStore


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
