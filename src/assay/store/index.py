"""The SQLite index (WAL) of every run: filled from the run directories, rebuildable from them.

Compute nodes never write here; the front end syncs it from the files, so it is safe on NFS.
Several assays may sync at once (concurrent imports and runs): each sync is one write
transaction taken up front (``BEGIN IMMEDIATE``), and a busy database is waited for
(``BUSY_TIMEOUT_S``) and retried, never reported as an error while it is only busy.
A run whose files cannot be read (a corrupt ``run.json``) is skipped and named in ``skipped``;
damaged lines of its records are skipped as every reader skips them (``assay.store.records``)
and the run's notes saying so are kept with it (``damage``).

The index is disposable: the run directories are the truth. Whenever it cannot be read (not a
database, a malformed page), holds tables other than the ones assay makes (a table dropped, an
older schema: ``SCHEMA_VERSION``), or disagrees with itself (the runs' sample counts against
the samples it holds), it is made again from the run directories, and ``rebuilt`` says why,
once. Only what the index cannot fix itself (a read-only or full disk) is an error.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

from assay.errors import StoreError
from assay.inputfile import read_side
from assay.model import current_params
from assay.store import safefile
from assay.store.records import JOBS, SAMPLES, Damage, read_records, read_run_info
from assay.store.rundir import RunStore

# Bump on any change to the tables below, or to what their rows hold: an index of another
# version is rebuilt. 3: params under today's names (``model.current_params``).
SCHEMA_VERSION = 3
TABLES = {
    "runs": (
        "run_id TEXT PRIMARY KEY, created TEXT, suite TEXT, status TEXT, label TEXT, "
        "finished TEXT, source TEXT, hostname TEXT, n_jobs INTEGER, n_failed INTEGER, "
        "n_samples INTEGER, indexed_size INTEGER, damage TEXT"
    ),
    "samples": (
        "run_id TEXT, job_id TEXT, probe TEXT, metric TEXT, unit TEXT, better TEXT, "
        "value REAL, params TEXT, stats TEXT"
    ),
}
INDICES = {"samples_metric": "samples(metric)", "samples_run": "samples(run_id)"}
BUSY_TIMEOUT_S = 30.0
BUSY_RETRIES = 5


def _stamp(run_dir: Path) -> int:
    """Changes whenever the run gains a job or changes status."""
    total = 0
    for name in ("run.json", JOBS, SAMPLES):
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


# SQLite opens the index, and the files it keeps beside it, by name: a symbolic link planted at
# one of those names (a shared ASSAY_HOME) would have it create or write whatever file the link
# points to. Python's sqlite3 cannot ask for SQLITE_OPEN_NOFOLLOW, so each name is looked at
# (not followed) before every connect, and a link or anything but a regular file is refused.
SQLITE_FILES = ("", "-wal", "-shm", "-journal")


def _refuse_links(path: Path) -> None:
    for suffix in SQLITE_FILES:
        name = path.with_name(path.name + suffix)
        try:
            mode = os.lstat(name).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _index_error(path, exc) from None
        if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
            what = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
            raise StoreError(
                f"the index {name} is {what}: assay never opens its index through one (it "
                "would write wherever the link points)",
                hint=f"remove {name}: the index is made again from the run directories, "
                "which are unaffected",
            )


def _busy(exc: Exception) -> bool:
    text = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


# What SQLite says of a file it cannot use as this index, and the index fixes by being made
# again; anything else (read-only, disk full, cannot open) is the user's to fix.
_UNUSABLE = ("not a database", "malformed", "no such table", "no such column", "corrupt")


def _unusable(exc: Exception) -> bool:
    text = str(exc)
    return isinstance(exc, sqlite3.DatabaseError) and any(w in text for w in _UNUSABLE)


def _db_text(text: Any) -> Any:
    """Text SQLite can hold: a lone surrogate (a non-UTF-8 label or host name, kept as is in
    the run's JSON) is written as its escape, ``\\udcff``, as every output shows it; before,
    the run was skipped as damaged and left ``runs`` and ``history`` (issue 28)."""
    if not isinstance(text, str) or text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class _Remake(Exception):
    """The index must be made again from the run directories; the message says why."""


def _cell(text: str | None, want: type, column: str) -> Any:
    """A JSON column's value as the index wrote it (an object, a list): anything else is a
    damaged index, made again from the run directories (a damaged cell was a traceback in
    ``runs`` or ``history``)."""
    try:
        value = json.loads(text) if isinstance(text, str | bytes) else None
    except ValueError:
        value = None
    if not isinstance(value, want):
        raise _Remake(f"a value of its {column} column is damaged")
    return value


def _retrying(action, path: Path):
    """Run ``action``; a database only busy with another assay is waited for, then retried."""
    for attempt in range(BUSY_RETRIES):
        try:
            return action()
        except sqlite3.Error as exc:
            if _unusable(exc):
                raise _Remake(f"it cannot be read ({exc})") from None
            if not _busy(exc) or attempt == BUSY_RETRIES - 1:
                raise _index_error(path, exc) from None
            time.sleep(0.2 * (attempt + 1))
        except OSError as exc:
            raise _index_error(path, exc) from None
    raise AssertionError("unreachable")


# Rows inserted at once: each holds its line's strings (a batch of 50,000 held 100 MB).
INSERT_BATCH = 5_000


class Index:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.skipped: list[str] = []  # runs that could not be read: "run-id: why"
        self.rebuilt: str | None = None  # why the index was made again, when it was
        self._store: RunStore | None = None  # what the last sync read: to refill it from
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _index_error(path, exc) from None
        self.db = self._connect()
        try:
            _retrying(self._open, path)
        except _Remake as why:
            self._remake(str(why))

    def _connect(self) -> sqlite3.Connection:
        _refuse_links(self.path)
        try:
            # isolation_level=None: transactions are ours (BEGIN IMMEDIATE in sync)
            return sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise _index_error(self.path, exc) from None

    def _open(self) -> None:
        if self.db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self.db.execute("PRAGMA journal_mode=WAL")
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        names = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master")}
        if version == 0 and not names:  # a new index
            self._create()
            return
        if version != SCHEMA_VERSION:
            raise _Remake(f"it was made by another version of assay (schema {version})")
        for table, columns in TABLES.items():
            have = [r[1] for r in self.db.execute(f"PRAGMA table_info({table})")]
            if have != [c.split()[0] for c in columns.split(", ")]:
                raise _Remake(f"its table {table!r} is missing or changed")
        if not set(INDICES) <= names:
            raise _Remake("an index of its tables is missing")

    def _create(self) -> None:
        script = "".join(f"CREATE TABLE IF NOT EXISTS {t} ({c});\n" for t, c in TABLES.items())
        script += "".join(f"CREATE INDEX IF NOT EXISTS {n} ON {on};\n" for n, on in INDICES.items())
        self.db.executescript(script + f"PRAGMA user_version = {SCHEMA_VERSION};\n")

    def _inode(self) -> int | None:
        try:
            return self.path.stat().st_ino
        except OSError:
            return None

    def _remake(self, why: str) -> None:
        """Make the index again, empty (``sync`` then fills it from the run directories).
        Under a lock; an index another assay has just made again (a new file since this one
        was opened) is used instead, if it can be."""
        mine = self._inode()
        with contextlib.suppress(sqlite3.Error):
            self.db.close()
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            with os.fdopen(safefile.open_append(lock_path), "a") as lock:  # never a link
                fcntl.flock(lock, fcntl.LOCK_EX)
                if self._inode() not in (mine, None):
                    self.db = self._connect()
                    try:
                        _retrying(self._open, self.path)
                        self._consistent_now()
                        return  # made again meanwhile by another assay
                    except _Remake:
                        self.db.close()
                for suffix in ("", "-wal", "-shm", "-journal"):
                    self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
                self.db = self._connect()
                _retrying(self._open, self.path)
        except OSError as exc:
            raise _index_error(self.path, exc) from None
        except _Remake as again:  # a new, empty file that still cannot be used: say why
            raise _index_error(self.path, Exception(str(again))) from None
        self.rebuilt = why

    def _consistent_now(self) -> None:
        """Read every table once (a malformed page shows), and check their counts agree."""
        if not _retrying(self._consistent, self.path):
            raise _Remake("its runs' sample counts disagreed with the samples it held")

    def close(self) -> None:
        self.db.close()

    def sync(self, store: RunStore, *, rebuild: bool = False) -> int:
        """Index every run whose files changed since it was last indexed; returns how many.
        An index found unusable or inconsistent on the way is made again and filled."""
        self._store = store
        try:
            return _retrying(lambda: self._sync_once(store, rebuild), self.path)
        except _Remake as why:
            self._remake(str(why))
        try:
            return _retrying(lambda: self._sync_once(store, True), self.path)
        except _Remake as again:  # made again, and still unusable: not ours to fix
            raise _index_error(self.path, Exception(str(again))) from None

    def _sync_once(self, store: RunStore, rebuild: bool) -> int:
        self.skipped = []
        self.db.execute("BEGIN IMMEDIATE")
        try:
            changed = self._sync(store, rebuild=rebuild)
            if not self._consistent():
                self.rebuilt = self.rebuilt or (
                    "its runs' sample counts disagreed with the samples it held"
                )
                changed = self._sync(store, rebuild=True)
        except BaseException:
            self.db.rollback()
            raise
        self.db.commit()
        return changed

    def _consistent(self) -> bool:
        """The samples held are as many as the runs say they have (a table emptied or rows
        lost by hand, a copy of the file cut short)."""
        stated = self.db.execute("SELECT COALESCE(SUM(n_samples), 0) FROM runs").fetchone()[0]
        held = self.db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        return stated == held

    def _sync(self, store: RunStore, *, rebuild: bool) -> int:
        if rebuild:
            self.db.execute("DELETE FROM samples")
            self.db.execute("DELETE FROM runs")
        known = dict(self.db.execute("SELECT run_id, indexed_size FROM runs").fetchall())
        changed = 0
        present = store.run_ids()
        for run_id in present:
            stamp = _stamp(store.runs_dir / run_id)
            if known.get(run_id) == stamp:
                continue
            try:
                self._index_run(store, run_id, stamp)
            except (StoreError, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
                why = str(exc).split("\n")[0] if isinstance(exc, StoreError) else (
                    f"{type(exc).__name__}: {exc}"
                )  # fmt: skip
                self.skipped.append(f"{run_id}: {why}")
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
        info = read_run_info(run_dir)  # a StoreError saying what is wrong with run.json
        system_file = run_dir / "system.json"
        system = json.loads(read_side(system_file, "system.json")) if system_file.exists() else {}
        hostname = system.get("hostname") if isinstance(system, dict) else None
        jobs_damage, samples_damage = Damage(JOBS), Damage(SAMPLES)
        results = list(read_records(run_dir / JOBS, jobs_damage))
        n_failed = sum(1 for r in results if r["status"] not in ("ok", "skipped"))
        self.db.execute("DELETE FROM samples WHERE run_id = ?", (run_id,))
        self.db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        n_samples = 0
        batch: list[tuple] = []
        for d in read_records(run_dir / SAMPLES, samples_damage):
            stats = d.get("stats")
            batch.append(
                (
                    run_id,
                    _db_text(d.get("job_id", "")),
                    _db_text(d["probe"]),
                    _db_text(d["metric"]),
                    _db_text(d["unit"]),
                    _db_text(d["better"]),
                    d["value"],
                    json.dumps(current_params(d["metric"], d.get("params") or {}), sort_keys=True),
                    json.dumps(stats) if stats else None,
                )
            )
            if len(batch) >= INSERT_BATCH:
                self.db.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?,?,?,?)", batch)
                n_samples += len(batch)
                batch.clear()
        self.db.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?,?,?,?)", batch)
        n_samples += len(batch)
        notes = [d.note(run_id) for d in (samples_damage, jobs_damage) if d]
        self.db.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                _db_text(info.created),
                _db_text(info.suite),
                info.status,
                _db_text(info.label),
                _db_text(info.finished),
                _db_text(info.source),
                _db_text(hostname) if isinstance(hostname, str) else "",
                info.n_jobs,
                n_failed,
                n_samples,
                stamp,
                json.dumps(notes) if notes else None,
            ),
        )

    def _read(self, action):
        """A query; an index found unusable by it is made again and filled from the store it
        was synced with, and the query asked again."""
        try:
            return _retrying(action, self.path)
        except _Remake as why:
            if self._store is None:
                raise _index_error(self.path, Exception(str(why))) from None
            self._remake(str(why))
            self.sync(self._store, rebuild=True)
            try:
                return _retrying(action, self.path)
            except _Remake as again:
                raise _index_error(self.path, Exception(str(again))) from None

    def runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Every run, oldest first; with ``limit``, only the newest ``limit`` of them."""
        return self._read(lambda: self._runs(limit))

    def _runs(self, limit: int | None) -> list[dict[str, Any]]:
        cols = (
            "run_id, created, suite, status, label, source, hostname, n_jobs, n_failed,"
            " n_samples, finished, damage"
        )
        if limit is None:
            cur = self.db.execute(f"SELECT {cols} FROM runs ORDER BY run_id")
            rows = cur.fetchall()
        else:
            cur = self.db.execute(
                f"SELECT {cols} FROM runs ORDER BY run_id DESC LIMIT ?", (max(limit, 0),)
            )
            rows = cur.fetchall()[::-1]
        names = [c[0] for c in cur.description]
        out = [dict(zip(names, row, strict=True)) for row in rows]
        for r in out:
            r["damage"] = _cell(r["damage"], list, "damage") if r["damage"] else []
        return out

    def count(self) -> int:
        """How many runs the index holds."""
        return self._read(lambda: self.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def history(self, metric: str, where: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every sample of ``metric`` across runs, oldest first, whose params match ``where``."""
        return self._read(lambda: self._history(metric, where))

    def _history(self, metric: str, where: dict[str, Any] | None) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT s.run_id, r.created, r.hostname, s.value, s.unit, s.params, s.stats"
            " FROM samples s JOIN runs r USING (run_id) WHERE s.metric = ? ORDER BY s.run_id",
            (metric,),
        ).fetchall()
        out = []
        for run_id, created, host, value, unit, params, stats in rows:
            p = _cell(params, dict, "params")
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
                    "stats": _cell(stats, dict, "stats") if stats else None,
                }
            )
        return out
