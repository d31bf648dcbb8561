"""``assay runs`` shows the newest runs (as git log pages), and ``assay import --help`` the
formats it reads."""

from __future__ import annotations

import re
from pathlib import Path

from assay.model import JobResult, System
from assay.parsers import FORMATS
from assay.store import RunStore
from assay.vocab import IMPORT_FORMATS
from conftest import run_cli


def _runs(home: Path, n: int) -> list[str]:
    store = RunStore(home)
    ids = []
    for i in range(n):
        w = store.create(suite="s", suite_text="", system=System(hostname="h"), argv=[],
                         label=f"run {i}")  # fmt: skip
        w.finish("complete")
        ids.append(w.info.run_id)
    return ids


def test_runs_shows_the_newest_20_and_says_how_to_see_the_rest(assay_home: Path):
    ids = _runs(assay_home, 25)
    shown = run_cli("runs", home=assay_home, check=True).stdout
    assert all(i in shown for i in ids[5:]) and not any(i in shown for i in ids[:5])
    assert shown.index(ids[5]) < shown.index(ids[-1])  # newest last, nearest the prompt
    assert "showing the newest 20 of 25 runs; 5 older runs not shown: assay runs --all" in (
        " ".join(shown.split())
    )
    every = run_cli("runs", "--all", home=assay_home, check=True).stdout
    assert all(i in every for i in ids) and "not shown" not in every
    three = run_cli("runs", "--limit", "3", home=assay_home, check=True).stdout
    assert [i for i in ids if i in three] == ids[-3:] and "22 older runs" in three
    assert run_cli("runs", "--limit", "0", home=assay_home).returncode == 2
    few = run_cli("runs", "-n", "30", home=assay_home, check=True).stdout
    assert all(i in few for i in ids) and "not shown" not in few


def test_import_help_lists_every_format_with_a_line():
    assert list(IMPORT_FORMATS) == list(FORMATS)  # one list of names: parsers and help agree
    proc = run_cli("import", "--help", home=Path("/nonexistent"), check=True)
    for name, what in IMPORT_FORMATS.items():
        assert re.search(rf"^\s+{re.escape(name)}\s+{re.escape(what[:30])}", proc.stdout, re.M)
    assert re.search(r"^\s+auto\s", proc.stdout, re.M)


def test_a_limit_beyond_any_store_is_refused_not_a_traceback(assay_home: Path):
    """issue 28: ``runs --limit 10^20`` reached SQLite's LIMIT: an OverflowError traceback."""
    _runs(assay_home, 2)
    proc = run_cli("runs", "--limit", str(10**20), home=assay_home)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "--limit" in proc.stderr
    assert run_cli("runs", "--limit", str(10**9), home=assay_home).returncode == 0


def test_history_min_change_is_a_finite_fraction(assay_home: Path):
    from assay.model import Sample

    store = RunStore(assay_home)
    w = store.create(suite="s", suite_text="", system=System(hostname="h"), argv=[])
    w.record(JobResult(job_id="1", status="ok", exit_code=0, wall_time=1, argv=[]),
             [Sample.make("stream", "memory.triad", 1e10, {})])  # fmt: skip
    w.finish("complete")
    for value in ("nan", "inf", "-1"):
        proc = run_cli("history", "memory.triad", "--min-change", value, home=assay_home)
        assert proc.returncode == 2 and "--min-change" in proc.stderr, proc.stderr
