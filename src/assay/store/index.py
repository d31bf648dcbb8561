"""The SQLite index (WAL) of every run: filled from the run directories, rebuildable from them.

Compute nodes never write here; the front end syncs it from the files, so it is safe on NFS.
Several assays may sync at once (concurrent imports and runs): each sync is one write
transaction taken up front (``BEGIN IMMEDIATE``), and a busy database is waited for
(``BUSY_TIMEOUT_S``) and retried, never reported as an error while it is only busy.
A run whose files cannot be read (a corrupt ``run.json``) is skipped and named in ``skipped``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from assay.errors import StoreError
from assay.store.rundir import RunStore, read_jsonl

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
BUSY_TIMEOUT_S = 30.0
BUSY_RETRIES = 5


def _stamp(run_dir: Path) -> int:
    """Changes whenever the run gains a job or changes status."""
    total = 0
    for name in ("run.json", "jobs.jsonl", "samples.jsonl"):
        p = run_dir / name
        if p.exists():
            st = p.stat()
            total += st.st_size + int(st.st_mtime_ns % 1_000_000_007)
    return total


def _index_error(path: Path, exc: Exception) -> StoreError:
    return StoreError(
        f"the index {path} cannot be read or written: {exc}",
        hint="the run directories are the truth and are unaffected; "
        "'assay runs --rebuild' rebuilds the index once the cause is fixed",
    )


def _busy(exc: Exception) -> bool:
    text = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _retrying(action, path: Path):
    """Run ``action``; a database only busy with another assay is waited for, then retried."""
    for attempt in range(BUSY_RETRIES):
        try:
            return action()
        except sqlite3.Error as exc:
            if not _busy(exc) or attempt == BUSY_RETRIES - 1:
                raise _index_error(path, exc) from None
            time.sleep(0.2 * (attempt + 1))
        except OSError as exc:
            raise _index_error(path, exc) from None
    raise AssertionError("unreachable")


class Index:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.skipped: list[str] = []  # runs that could not be read: "run-id: why"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: transactions are ours (BEGIN IMMEDIATE in sync)
            self.db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise _index_error(path, exc) from None
        _retrying(self._open, path)

    def _open(self) -> None:
        if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def sync(self, store: RunStore, *, rebuild: bool = False) -> int:
        """Index every run whose files changed since it was last indexed; returns how many."""
        return _retrying(lambda: self._sync_once(store, rebuild), self.path)

    def _sync_once(self, store: RunStore, rebuild: bool) -> int:
        self.skipped = []
        self.db.execute("BEGIN IMMEDIATE")
        try:
            changed = self._sync(store, rebuild=rebuild)
        except BaseException:
            self.db.rollback()
            raise
        self.db.commit()
        return changed

    def _sync(self, store: RunStore, *, rebuild: bool) -> int:
        known = dict(self.db.execute("SELECT run_id, indexed_size FROM runs").fetchall())
        if rebuild:
            known = {}
        changed = 0
        present = store.run_ids()
        for run_id in present:
            stamp = _stamp(store.runs_dir / run_id)
            if known.get(run_id) == stamp:
                continue
            try:
                self._index_run(store, run_id, stamp)
            except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
                self.skipped.append(f"{run_id}: {type(exc).__name__}: {exc}")
                self.db.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
                self.db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
                continue
            changed += 1
        for gone in set(known) - set(present):
            self.db.execute("DELETE FROM runs WHERE run_id = ?", (gone,))
            self.db.execute("DELETE FROM samples WHERE run_id = ?", (gone,))
        return changed

    def _index_run(self, store: RunStore, run_id: str, stamp: int) -> None:
        """Stream the run's samples into the index in batches, without building objects:
        at a million samples this is the difference between seconds and a minute."""
        run_dir = store.runs_dir / run_id
        info = json.loads((run_dir / "run.json").read_text())
        if not isinstance(info, dict):
            raise ValueError("run.json does not hold an object")
        system_file = run_dir / "system.json"
        hostname = (
            json.loads(system_file.read_text()).get("hostname") if system_file.exists() else ""
        )
        results = list(read_jsonl(run_dir / "jobs.jsonl"))
        n_failed = sum(1 for r in results if r.get("status") not in ("ok", "skipped"))
        self.db.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
        self.db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        n_samples = 0
        batch: list[tuple] = []
        for d in read_jsonl(run_dir / "samples.jsonl"):
            stats = d.get("stats")
            batch.append(
                (
                    run_id,
                    d.get("job_id", ""),
                    d["probe"],
                    d["metric"],
                    d["unit"],
                    d["better"],
                    d["value"],
                    json.dumps(d.get("params") or {}, sort_keys=True),
                    json.dumps(stats) if stats else None,
                )
            )
            if len(batch) >= 50_000:
                self.db.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?,?,?,?)", batch)
                n_samples += len(batch)
                batch.clear()
        self.db.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?,?,?,?)", batch)
        n_samples += len(batch)
        self.db.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                info.get("created", ""),
                info.get("suite", ""),
                info.get("status", ""),
                info.get("label", ""),
                info.get("finished", ""),
                info.get("source", "assay"),
                hostname or "",
                info.get("n_jobs", 0),
                n_failed,
                n_samples,
                stamp,
            ),
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
