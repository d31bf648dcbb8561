"""The SQLite index (WAL) of every run: filled from the run directories, rebuildable from them.

Compute nodes never write here; the front end syncs it from the files, so it is safe on NFS.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from assay.store.rundir import RunStore

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, created TEXT, suite TEXT, status TEXT, label TEXT,
    finished TEXT, source TEXT, hostname TEXT, n_jobs INTEGER, n_failed INTEGER,
    n_samples INTEGER, indexed_size INTEGER
);
CREATE TABLE IF NOT EXISTS samples (
    run_id TEXT, job_id TEXT, probe TEXT, metric TEXT, unit TEXT, better TEXT,
    value REAL, params TEXT, stats TEXT
);
CREATE INDEX IF NOT EXISTS samples_metric ON samples(metric);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id);
"""


def _stamp(run_dir: Path) -> int:
    """Changes whenever the run gains a job or changes status."""
    total = 0
    for name in ("run.json", "jobs.jsonl", "samples.jsonl"):
        p = run_dir / name
        if p.exists():
            st = p.stat()
            total += st.st_size + int(st.st_mtime_ns % 1_000_000_007)
    return total


class Index:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def sync(self, store: RunStore, *, rebuild: bool = False) -> int:
        """Index every run whose files changed since it was last indexed; returns how many."""
        known = dict(self.db.execute("SELECT run_id, indexed_size FROM runs").fetchall())
        if rebuild:
            known = {}
        changed = 0
        for run_id in store.run_ids():
            stamp = _stamp(store.runs_dir / run_id)
            if known.get(run_id) == stamp:
                continue
            self._index_run(store, run_id, stamp)
            changed += 1
        present = set(store.run_ids())
        for gone in set(known) - present:
            self.db.execute("DELETE FROM runs WHERE run_id = ?", (gone,))
            self.db.execute("DELETE FROM samples WHERE run_id = ?", (gone,))
        self.db.commit()
        return changed

    def _index_run(self, store: RunStore, run_id: str, stamp: int) -> None:
        run = store.load(run_id)
        self.db.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
        self.db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        n_failed = sum(1 for r in run.results if r.status not in ("ok", "skipped"))
        self.db.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                run.info.created,
                run.info.suite,
                run.info.status,
                run.info.label,
                run.info.finished,
                run.info.source,
                run.system.hostname or "",
                run.info.n_jobs,
                n_failed,
                len(run.samples),
                stamp,
            ),
        )
        self.db.executemany(
            "INSERT INTO samples VALUES (?,?,?,?,?,?,?,?,?)",
            [
                (
                    run_id,
                    s.job_id,
                    s.probe,
                    s.metric,
                    s.unit,
                    s.better,
                    s.value,
                    json.dumps(s.params, sort_keys=True),
                    json.dumps(s.stats.to_dict()) if s.stats else None,
                )
                for s in run.samples
            ],
        )

    def runs(self) -> list[dict[str, Any]]:
        cur = self.db.execute(
            "SELECT run_id, created, suite, status, label, source, hostname, n_jobs, n_failed,"
            " n_samples, finished FROM runs ORDER BY run_id"
        )
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def history(self, metric: str, where: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every sample of ``metric`` across runs, oldest first, whose params match ``where``."""
        rows = self.db.execute(
            "SELECT s.run_id, r.created, r.hostname, s.value, s.unit, s.params, s.stats"
            " FROM samples s JOIN runs r USING (run_id) WHERE s.metric = ? ORDER BY s.run_id",
            (metric,),
        ).fetchall()
        out = []
        for run_id, created, host, value, unit, params, stats in rows:
            p = json.loads(params)
            if where and any(str(p.get(k)) != str(v) for k, v in where.items()):
                continue
            out.append(
                {
                    "run_id": run_id,
                    "created": created,
                    "hostname": host,
                    "value": value,
                    "unit": unit,
                    "params": p,
                    "stats": json.loads(stats) if stats else None,
                }
            )
        return out
