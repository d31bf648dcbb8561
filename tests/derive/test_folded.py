"""A run's figures folded from its stored lines (one pass, no Sample per line) and cached
beside its records: the same figures as folding the samples in memory, remade whenever the run
changed, and never an error when the cache cannot be read or written."""

from __future__ import annotations

import json
import os
from itertools import pairwise
from pathlib import Path

import pytest

from assay.analysis.statistics.stats import fold_samples
from assay.figures import folded
from assay.figures.folded import CACHE_NAME, cache_figures, fold_file, folded_of
from assay.model import JobResult, Sample, Stats, System
from assay.report.render import render
from assay.run.importer import import_files
from assay.store import RunStore
from assay.store.cache import line_starts, lines_with_offsets

FIX = Path(__file__).parents[1] / "fixtures"


def _samples() -> list[Sample]:
    """Repetitions (odd and even counts), float params that differ per repetition, per-node
    and all-pairs placements with hosts, a measurement repeated once, per-sample stats."""
    out = []
    for rep in (1, 2, 3, 4):
        for size in (1, 8, 4096):
            out.append(
                Sample.make(
                    "p2p", "p2p.latency", 1e-6 * size**0.1 * (1 + 0.01 * ((rep * 7) % 5)),
                    {"size": size, "mpi": "openmpi", "repetition": rep, "p90": 1e-6 * rep},
                    Stats(n=100, min=1e-6, max=3e-6 * rep, mean=2e-6),
                )
            )  # fmt: skip
        for k, host in enumerate(("n1", "n2", "n3")):
            out.append(
                Sample.make(
                    "stream", "memory.triad", 20e9 + 1e8 * k + 1e7 * rep,
                    {"threads": 4, "min_time": 0.01 * rep, "hosts": [host],
                     "placement": "per-node", "repetition": rep},
                )
            )  # fmt: skip
        for a, b in (("n1", "n2"), ("n1", "n3"), ("n2", "n3")):
            out.append(
                Sample.make(
                    "p2p", "p2p.bandwidth", 1e9 + rep * 1e6 + (a == "n2") * 5e8,
                    {"size": 131072, "mpi": "mpich", "hosts": [a, b], "placement": "all-pairs",
                     "round": 1, "repetition": rep},
                )
            )  # fmt: skip
    out.append(Sample.make("dgemm", "compute.dgemm", 1e11, {"n": 2000}))
    return out


def _stored_run(home: Path, samples: list[Sample]) -> Path:
    store = RunStore(home)
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    for i, s in enumerate(samples):
        w.record(JobResult(job_id=f"{i:03d}", status="ok", exit_code=0, wall_time=1.0, argv=[]),
                 [s])  # fmt: skip
    w.finish("complete")
    return w.path


def test_folding_the_stored_lines_gives_the_figures_of_folding_in_memory(tmp_path: Path) -> None:
    path = _stored_run(tmp_path, _samples())
    loaded = RunStore(tmp_path).load()
    in_memory = fold_samples(loaded.samples)
    from_file = fold_file(path / "samples.jsonl")
    assert from_file == in_memory
    assert from_file.n_samples == len(_samples())
    by_key = {(f.sample.metric, f.sample.params.get("size")): f for f in in_memory.figures}
    lat = by_key[("p2p.latency", 8)]
    assert lat.repetitions == 4 and lat.spread is not None and len(lat.values) == 4
    # even count: the lower of the two middle repetitions, whole (its own p90 and stats)
    median = lat.median_member()
    assert median.value == sorted(lat.values)[1]
    assert median in loaded.samples  # a stored repetition, with its own p90 and stats
    assert by_key[("compute.dgemm", None)].repetitions == 1
    # per host: 3 nodes and 3 links, each with its 4 repetitions
    assert len(in_memory.by_host) == 6 and {f.repetitions for f in in_memory.by_host} == {4}


def _cache_parts(cache: Path) -> tuple[dict, dict]:
    head, payload = cache.read_text().splitlines()
    return json.loads(head), json.loads(payload)


def test_the_cache_is_written_used_and_remade_when_the_run_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _stored_run(tmp_path, _samples())
    store = RunStore(tmp_path)
    first = folded_of(store.load(samples=False))
    cache = path / CACHE_NAME
    assert cache.exists()
    # Used: a second report does not fold.
    with monkeypatch.context() as m:
        m.setattr(folded, "fold_file", lambda *a, **k: pytest.fail("folded again"))
        assert folded_of(store.load(samples=False)) == first
    # Remade: the run gained a sample since (samples.jsonl grew).
    extra = Sample.make("dgemm", "compute.dgemm", 2e11, {"n": 4000})
    with open(path / "samples.jsonl", "a") as f:
        f.write(json.dumps(extra.to_dict()) + "\n")
    again = folded_of(store.load(samples=False))
    assert again.n_samples == first.n_samples + 1
    assert _cache_parts(cache)[1]["n_samples"] == again.n_samples


def _dgemm_value(folded_figures) -> float:
    (f,) = [f for f in folded_figures.figures if f.sample.metric == "compute.dgemm"]
    return f.sample.value


def test_a_digit_changed_in_the_samples_with_size_and_time_kept_remakes_the_cache(
    tmp_path: Path,
) -> None:
    """The cache names its source by content (a digest), not by size and time: a sample file
    restored from a backup, or copied with its times kept, is folded again."""
    path = _stored_run(tmp_path, _samples())
    store = RunStore(tmp_path)
    samples = path / "samples.jsonl"
    assert _dgemm_value(folded_of(store.load(samples=False))) == 1e11
    st = samples.stat()
    text = samples.read_text()
    samples.write_text(text.replace('"value": 100000000000.0', '"value": 900000000000.0'))
    os.utime(samples, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert samples.stat().st_size == st.st_size and samples.stat().st_mtime_ns == st.st_mtime_ns
    run = store.load(samples=False)
    assert _dgemm_value(folded_of(run)) == 9e11  # what samples.jsonl says, as json/csv show it
    assert "| DGEMM | 900.00 |" in render(store.load(samples=False), "md")
    assert json.loads(render(store.load(samples=False), "json"))["samples"][-1]["value"] == 9e11


def test_a_figure_changed_in_the_cache_is_never_shown(tmp_path: Path) -> None:
    """A digit changed in figures.cache.json (by hand, a bad disk) fails its checksum: the
    figures are folded again from the samples, so md/term/html agree with json/csv."""
    path = _stored_run(tmp_path, _samples())
    store = RunStore(tmp_path)
    assert _dgemm_value(folded_of(store.load(samples=False))) == 1e11
    cache = path / CACHE_NAME
    text = cache.read_text()
    assert "100000000000.0" in text
    cache.write_text(text.replace("100000000000.0", "900000000000.0"))
    assert _dgemm_value(folded_of(store.load(samples=False))) == 1e11
    assert "900000000000.0" not in cache.read_text()  # and made again
    assert "| DGEMM | 100.00 |" in render(store.load(samples=False), "md")


@pytest.mark.parametrize("damage", ["{not json", "[]", '{"version": 2}', "", "{}\n{}\n"])
def test_a_damaged_cache_is_remade_not_an_error(tmp_path: Path, damage: str) -> None:
    path = _stored_run(tmp_path, _samples())
    expected = fold_file(path / "samples.jsonl")
    (path / CACHE_NAME).write_text(damage)
    assert folded_of(RunStore(tmp_path).load(samples=False)) == expected
    # right version, stamp and checksum, wrong content (written by a faulty assay)
    head, payload = _cache_parts(path / CACHE_NAME)
    payload["figures"] = "not a list"
    from assay.store.cache import Stamp, write_cache

    write_cache(path / CACHE_NAME, head["version"], Stamp(**head["made_from"]), payload,
                head["extra"])  # fmt: skip
    assert folded_of(RunStore(tmp_path).load(samples=False)) == expected


def test_a_cache_that_cannot_be_written_is_no_error(tmp_path: Path) -> None:
    path = _stored_run(tmp_path, _samples())
    (path / CACHE_NAME).mkdir()  # a directory where the file would go: the rename fails
    folded = folded_of(RunStore(tmp_path).load(samples=False))
    assert folded.n_samples == len(_samples())
    assert not list(path.glob(f".{CACHE_NAME}.tmp"))


def test_lines_a_kill_cut_or_damaged_are_skipped_as_loading_skips_them(tmp_path: Path) -> None:
    path = _stored_run(tmp_path, _samples())
    intact = fold_samples(RunStore(tmp_path).load().samples)
    with open(path / "samples.jsonl", "a") as f:
        f.write('{"probe": "p2p"}\n')  # no metric, no value
        f.write("not json\n")
        f.write('{"probe": "p2p", "metric": "m", "value": 1, "unit": "s", "better": "lower"} x\n')
        f.write('{"probe": "p2p", "metric": "p2p.lat')  # cut by a kill
    assert fold_file(path / "samples.jsonl") == intact


@pytest.mark.parametrize("workers", [2, 3, 7])
def test_folding_in_parts_gives_the_figures_of_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A large file folds in parts, each in a forked process, merged in file order: the same
    figures, groups in the same order, damaged and cut lines skipped as in one pass."""
    path = _stored_run(tmp_path, _samples())
    with open(path / "samples.jsonl", "a") as f:
        f.write("not json\n")
        f.write('{"probe": "p2p", "metric": "p2p.lat')  # cut by a kill
    one_pass = fold_file(path / "samples.jsonl")
    monkeypatch.setattr(folded, "PART_BYTES", 1)  # this small file counts as large
    parts = fold_file(path / "samples.jsonl", workers=workers)
    assert parts == one_pass
    assert [f.sample.params for f in parts.figures] == [f.sample.params for f in one_pass.figures]


def test_line_starts_cut_at_line_starts_only(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [b'{"a": %d, "pad": "%s"}\n' % (i, b"x" * (i % 7)) for i in range(50)]
    path.write_bytes(b"".join(lines) + b'{"cut')
    starts = {0}
    for line in lines:
        starts.add(max(starts) + len(line))
    for parts in (1, 2, 4, 9, 500):
        cuts = line_starts(path, parts)
        assert cuts[0] == 0 and cuts[-1] == path.stat().st_size
        assert cuts == sorted(set(cuts)) and len(cuts) <= parts + 1
        assert set(cuts[1:-1]) <= starts
        read = [line for a, b in pairwise(cuts) for _, line in lines_with_offsets(path, a, b)]
        assert read == [line for _, line in lines_with_offsets(path)]


def test_the_report_from_the_cache_is_the_report_from_the_samples(tmp_path: Path) -> None:
    """Real tool outputs (fixtures) imported: the Markdown report read through the fold of
    the stored lines and its cache is the one built from the samples in memory."""
    files = [
        FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out",
        FIX / "osu" / "alaska_ompi4_ucx_osu_bw.out",
        FIX / "stream" / "revyos_lpi4a_omp8.txt",
        FIX / "fio" / "randread_8k.jsonplus.json",
    ]
    store = RunStore(tmp_path)
    run_id, _ = import_files(store, files, "auto", system=System(hostname="h"), label="fx")
    assert run_id is not None
    path = store.runs_dir / run_id
    assert (path / CACHE_NAME).exists()  # written as the import finished
    from_samples = render(store.load(run_id), "md")
    from_cache = render(store.load(run_id, samples=False), "md")
    (path / CACHE_NAME).unlink()
    from_lines = render(store.load(run_id, samples=False), "md")
    assert from_samples == from_cache == from_lines
    for title in ("STREAM", "Latency", "Bandwidth", "randread"):
        assert title in from_samples


def test_cache_figures_leaves_a_run_without_samples_alone(tmp_path: Path) -> None:
    path = _stored_run(tmp_path, [])
    cache_figures(path)
    assert folded_of(RunStore(tmp_path).load(samples=False)).figures == []
