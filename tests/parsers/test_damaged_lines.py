"""One rule for damaged record lines (assay.store.records), applied by every reader.

A line of samples.jsonl or jobs.jsonl that is not a record (not UTF-8, not one JSON object,
NaN, a sample without its unit, ...) is skipped and counted; whoever shows the run says so
once, naming the lines. Real runs: real OSU output imported with the real CLI, then damaged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.figures.folded import fold_file
from assay.model import JobResult, Sample, Stats, System
from assay.store import Index, RunStore
from assay.store.records import Damage, job_problem, read_run_info, sample_problem
from conftest import run_cli

FIX = Path(__file__).parents[1] / "fixtures" / "osu"

GOOD = {"probe": "p2p", "metric": "p2p.latency", "value": 1e-6, "unit": "s", "better": "lower",
        "params": {"size": 8}, "run_id": "r", "job_id": "j"}  # fmt: skip

# Each a damaged line of samples.jsonl, with the reason the note gives.
DAMAGED_SAMPLES: dict[str, tuple[bytes, str]] = {
    "not UTF-8": (b'{"probe": "p2p\xff\xfe"}', "not UTF-8"),
    "empty object": (b"{}", "no 'probe'"),
    "no unit": (json.dumps({k: v for k, v in GOOD.items() if k != "unit"}).encode(), "no 'unit'"),
    "NaN value": (json.dumps({**GOOD, "value": float("nan")}).encode(), "NaN is not"),
    "Infinity value": (json.dumps({**GOOD, "value": float("inf")}).encode(), "Infinity is not"),
    "text value": (json.dumps({**GOOD, "value": "1e-6"}).encode(), "'value' is not a finite"),
    "bool value": (json.dumps({**GOOD, "value": True}).encode(), "'value' is not a finite"),
    "huge integer": (json.dumps({**GOOD, "value": 10**400}).encode(), "'value' is not a finite"),
    "better unknown": (json.dumps({**GOOD, "better": "up"}).encode(), "'better' is neither"),
    "better a list": (json.dumps({**GOOD, "better": ["up"]}).encode(), "'better' is neither"),
    "params a list": (json.dumps({**GOOD, "params": [1]}).encode(), "'params' is not an object"),
    "stats without n": (json.dumps({**GOOD, "stats": {"min": 1.0}}).encode(), "'stats.n'"),
    "stats text": (json.dumps({**GOOD, "stats": {"n": 3, "min": "a"}}).encode(), "'stats.min'"),
    "a list": (b"[1, 2]", "not a JSON object"),
    "two objects": (json.dumps(GOOD).encode() + b" {}", "more after the JSON object"),
    "not JSON": (b"{probe: p2p}", "not JSON"),
    "nested too deep": (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
}


def _lines(store_dir: Path) -> list[bytes]:
    return (store_dir / "samples.jsonl").read_bytes().splitlines(keepends=True)


def _damage(path: Path, lines: list[bytes]) -> None:
    """Put ``lines`` (each without its newline) after the first stored line."""
    stored = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([stored[0], *(line + b"\n" for line in lines), *stored[1:]]))


@pytest.mark.parametrize("form", list(DAMAGED_SAMPLES))
def test_each_damaged_sample_line_is_skipped_counted_and_named(tmp_path: Path, form: str):
    """The same rule for loading the run, folding its figures (in one pass and in parts) and
    the index: the damaged line is left out, every good line is kept, the line is named."""
    store = RunStore(tmp_path)
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    for i in range(3):
        s = Sample.make("p2p", "p2p.latency", 1e-6 * (i + 1), {"size": i}, Stats(n=5, min=1e-7))
        w.record(JobResult(job_id=f"{i}", status="ok", exit_code=0, wall_time=1, argv=[]), [s])
    w.finish("complete")
    line, why = DAMAGED_SAMPLES[form]
    _damage(w.path / "samples.jsonl", [line])
    run = store.load()
    assert [s.value for s in run.samples] == [1e-6, 2e-6, 3e-6]
    (damage,) = run.damage.values()
    assert damage.count == 1 and damage.named[0][0] == 2 and why in damage.named[0][1]
    note = run.damage_notes()[0]
    assert note.startswith(f"run {w.info.run_id}: 1 damaged line in samples.jsonl skipped")
    assert f"line 2: {why}" in note
    found = Damage("samples.jsonl")
    assert fold_file(w.path / "samples.jsonl", damage=found).n_samples == 3
    assert found.count == 1 and found.named == damage.named
    index = Index(tmp_path / "assay.db")
    index.sync(store)
    (row,) = index.runs()
    assert row["n_samples"] == 3 and row["damage"] == [note]
    assert len(index.history("p2p.latency")) == 3
    index.close()


def test_damage_in_parts_is_numbered_as_in_one_pass(tmp_path: Path, monkeypatch):
    """A large file folds in parts: damaged lines are numbered from the file's first line."""
    from assay.figures import folded

    store = RunStore(tmp_path)
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    samples = [Sample.make("p2p", "p2p.latency", 1e-6 * (i + 1), {"size": i}) for i in range(40)]
    w.record(JobResult(job_id="1", status="ok", exit_code=0, wall_time=1, argv=[]), samples)
    w.finish("complete")
    path = w.path / "samples.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    for k in (30, 20, 10, 3):
        lines.insert(k, b"{}\n")
    path.write_bytes(b"".join(lines))
    where = [n for n, line in enumerate(lines, 1) if line == b"{}\n"]
    one = Damage("samples.jsonl")
    fold_file(path, damage=one)
    monkeypatch.setattr(folded, "PART_BYTES", 1)
    parts = Damage("samples.jsonl")
    fold_file(path, workers=3, damage=parts)
    assert [n for n, _ in one.named] == where == [n for n, _ in parts.named]
    assert one.offsets == parts.offsets and parts.count == 4


def test_a_damaged_job_line_is_skipped_and_named():
    good = {"job_id": "1", "status": "ok", "exit_code": 0, "wall_time": 1.0, "argv": []}
    assert job_problem(good) is None
    for bad, why in [
        ({}, "no 'job_id'"),
        ({**good, "status": "fine"}, "'status'"),
        ({**good, "status": {"a": 1}}, "'status'"),  # unhashable: a TypeError before
        ({**good, "exit_code": "0"}, "'exit_code'"),
        ({k: v for k, v in good.items() if k != "argv"}, "'argv'"),
        ({**good, "hosts": "n1"}, "'hosts'"),
        ({**good, "n_samples": -1}, "'n_samples'"),
        ({**good, "wall_time": None}, "'wall_time'"),
    ]:
        assert why in (job_problem(bad) or ""), bad
    assert sample_problem(GOOD) is None


def _import_two(home: Path) -> list[str]:
    ids = []
    for name in ("alaska_ompi4_ucx_osu_latency.out", "alaska_ompi4_ucx_osu_bw.out"):
        run_cli("import", str(FIX / "alaska_ompi4_ucx_osu_latency.out"), str(FIX / name),
                home=home, check=True)  # fmt: skip
        ids.append(sorted(p.name for p in (home / "runs").iterdir())[-1])
    return ids


@pytest.mark.slow
def test_every_reader_skips_the_damaged_lines_and_says_so_once(assay_home: Path, tmp_path):
    """report (every format), compare, summary, runs, history, references add: no crash, the
    run is listed and shown with its good samples, and each says once which lines it skipped."""
    a, b = _import_two(assay_home)
    run_dir = assay_home / "runs" / b
    n_good = len(_lines(run_dir))
    damaged = [line for line, _ in DAMAGED_SAMPLES.values()][:4]  # not UTF-8, {}, no unit, NaN
    _damage(run_dir / "samples.jsonl", damaged)
    with open(run_dir / "jobs.jsonl", "ab") as f:
        f.write(b'{"job_id": "x", "status": 3}\n')
    note = f"run {b}: 4 damaged lines in samples.jsonl skipped (line 2: not UTF-8; line 3"
    env = {"ASSAY_REFERENCES": str(tmp_path / "refs")}
    commands = [
        *(["report", b, "-f", fmt] for fmt in ("term", "md", "html", "json", "csv")),
        ["report", a, b, "-f", "json"],
        ["report", a, b, "-f", "md"],
        ["compare", a, b],
        ["summary", b],
        ["runs"],
        ["history", "p2p.latency", "--params", "size=8"],
        ["references", "add", "--from", b, "damaged-run"],
    ]
    for args in commands:
        proc = run_cli(*args, home=assay_home, env=env)
        err = " ".join(proc.stderr.split())
        assert proc.returncode == 0 and "Traceback" not in err, (args, proc.stderr)
        assert err.count(note) == 1, (args, proc.stderr)  # said once, naming the lines
        assert err.count(f"run {b}: 1 damaged line in jobs.jsonl skipped (line 3: ") == 1
        if args[-1] == "json" and len(args) == 4:
            doc = json.loads(proc.stdout)
            assert len(doc["samples"]) == n_good
            assert any(note in d for d in doc["damaged_lines"])
        if args[-1] == "csv":
            assert len(proc.stdout.splitlines()) == n_good + 1
        if args[0] == "runs":
            assert b in proc.stdout and str(n_good) in proc.stdout
        if args[-1] == "md" and len(args) == 4:
            assert note in " ".join(proc.stdout.split())  # and the report itself says it
    # the cached report says it too (the damage is kept with the figures' cache)
    again = run_cli("report", b, "-f", "md", home=assay_home, check=True)
    assert note in " ".join(again.stdout.split()) and note in " ".join(again.stderr.split())
    fast_json = json.loads(run_cli("report", b, "-f", "json", home=assay_home).stdout)
    assert len(fast_json["samples"]) == n_good  # skipped by position, from the cache


def test_read_run_info_reads_a_good_run_json(tmp_path: Path):
    store = RunStore(tmp_path)
    w = store.create(suite="t", suite_text="", system=System(), argv=["assay", "run"])
    info = read_run_info(w.path)
    assert info.run_id == w.info.run_id and info.argv == ["assay", "run"]


def test_the_json_stream_without_a_cache_checks_in_parts(tmp_path: Path, monkeypatch):
    """No cache to say which lines are damaged: they are found (in parts) before streaming."""
    from assay.figures import folded
    from assay.figures.folded import sample_lines

    store = RunStore(tmp_path)
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    samples = [Sample.make("p2p", "p2p.latency", 1e-6 * (i + 1), {"size": i}) for i in range(30)]
    w.record(JobResult(job_id="1", status="ok", exit_code=0, wall_time=1, argv=[]), samples)
    w.finish("complete")
    _damage(w.path / "samples.jsonl", [b"{}", b"[]"])
    monkeypatch.setattr(folded, "PART_BYTES", 1)
    run = store.load(samples=False)
    assert not (w.path / folded.CACHE_NAME).exists()
    lines = [line for batch in sample_lines(run) for line in batch]
    assert [json.loads(line)["value"] for line in lines] == [s.value for s in samples]
    assert run.damage_notes() == [
        f"run {w.info.run_id}: 2 damaged lines in samples.jsonl skipped (line 2: no 'probe'; "
        "line 3: not a JSON object)"
    ]


def test_text_lines_split_blocks_at_lines_and_stop_at_the_checked_size(tmp_path: Path):
    from assay.store.lines import text_lines

    path = tmp_path / "s.jsonl"
    lines = [f'{{"k": {i}, "pad": "{"é" * (i % 9)}"}}' for i in range(200)]
    data = "".join(f"{line}\n" for line in lines).encode()
    path.write_bytes(data + b'{"cut')  # a last line cut by a kill

    def read(end: int, block: int) -> list[str]:
        return [line for batch in text_lines(path, end, block) for line in batch]

    for block in (1, 7, 64, 4096, 1 << 20):
        assert read(path.stat().st_size, block) == lines
    assert read(len(data) - 3, 16) == lines[:-1]  # grown since: not read


def test_an_overlong_line_is_damaged_and_never_held_whole(tmp_path: Path, monkeypatch):
    from assay.store import lines

    monkeypatch.setattr(lines, "MAX_LINE", 1024)
    store = RunStore(tmp_path)
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    samples = [Sample.make("p2p", "p2p.latency", 1e-6 * (i + 1), {"size": i}) for i in range(3)]
    w.record(JobResult(job_id="1", status="ok", exit_code=0, wall_time=1, argv=[]), samples)
    w.finish("complete")
    _damage(w.path / "samples.jsonl", [b'{"pad": "' + b"x" * 5000 + b'"}'])
    run = store.load()
    assert [s.value for s in run.samples] == [s.value for s in samples]
    assert "line 2: longer than 1,024 bytes" in run.damage_notes()[0]
    assert fold_file(w.path / "samples.jsonl").n_samples == 3


LIMITED = """
import resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
sys.exit(subprocess.run([sys.executable, "-m", "assay", *sys.argv[1:]]).returncode)
"""


def test_record_files_that_are_devices_are_not_read(assay_home: Path):
    """samples.jsonl, jobs.jsonl or run.json a link to /dev/zero (no end, no newline): never
    read until memory runs out (each command runs here within 2 GiB of address space)."""
    import subprocess
    import sys

    store = RunStore(assay_home)
    ids = []
    for name in ("samples.jsonl", "jobs.jsonl", "run.json"):
        w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
        s = Sample.make("p2p", "p2p.latency", 1e-6, {"size": 8})
        w.record(JobResult(job_id="1", status="ok", exit_code=0, wall_time=1, argv=[]), [s])
        w.finish("complete")
        (w.path / name).unlink()
        (w.path / name).symlink_to("/dev/zero")
        ids.append(w.info.run_id)

    def cli(*args: str) -> subprocess.CompletedProcess:
        env = {**__import__("os").environ, "ASSAY_HOME": str(assay_home), "COLUMNS": "200"}
        return subprocess.run([sys.executable, "-c", LIMITED, *args], capture_output=True,
                              text=True, timeout=120, env=env)  # fmt: skip

    for run_id, name in zip(ids[:2], ("samples.jsonl", "jobs.jsonl"), strict=True):
        proc = cli("report", run_id, "-f", "json")
        assert proc.returncode == 0, proc.stderr
        assert f"run {run_id}: {name} skipped: not a regular file" in " ".join(proc.stderr.split())
    proc = cli("report", ids[2])
    assert proc.returncode == 2 and "run.json cannot be read: it is not a regular file" in (
        " ".join(proc.stderr.split())
    )
    runs = cli("runs")
    assert runs.returncode == 0 and ids[0] in runs.stdout and ids[1] in runs.stdout


def test_the_json_report_of_a_run_without_samples(tmp_path: Path):
    from assay.report.render import render

    store = RunStore(tmp_path)
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    w.record(JobResult(job_id="1", status="failed", exit_code=1, wall_time=1, argv=[]), [])
    w.finish("failed")
    assert not (w.path / "samples.jsonl").exists()
    doc = json.loads(render(store.load(samples=False), "json"))
    assert doc["samples"] == [] and doc["jobs"][0]["status"] == "failed"
