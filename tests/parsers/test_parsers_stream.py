"""STREAM files of several runs, built from the real outputs of tests/fixtures/real/stream/ by
what people do to them (a scaling script's egrep, outputs appended): each run keeps the thread
count it printed, a failed run gives no rate, the rest of the file still imports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assay.errors import ParseError
from assay.parsers import stream

REAL = Path(__file__).parents[1] / "fixtures" / "real" / "stream"
# stream-scaling's filter of every run after the first (github.com/gregs1104/stream-scaling)
EGREP = re.compile(r"Number of Threads requested|Function|Triad|Failed|Expected|Observed")


def _runs(name: str) -> list[str]:
    """The file's runs, each from its '---' line before the STREAM banner."""
    text = (REAL / name).read_text()
    starts = [m.start() for m in re.finditer(r"-+\nSTREAM version", text)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def _scaling_510() -> str:
    """stream-scaling over STREAM 5.10 runs: run 1 whole, then only what its egrep keeps."""
    runs = _runs("epyc_ipa_gcc_1-96threads_appended.log")
    kept = [runs[0]]
    for run in runs[1:8]:
        kept.append("\n".join(ln for ln in run.splitlines() if EGREP.search(ln)) + "\n\n")
    return "".join(kept)


def test_a_triad_only_run_has_its_own_thread_count_not_the_first_runs_counted_one():
    # 5.10 prints "Threads counted = 1" in run 1; the filtered runs print only "requested"
    r = stream.parse(_scaling_510(), "scaling.txt")
    triads = [(s.params["run"], s.params["threads"]) for s in r.samples if "triad" in s.metric]
    assert triads == [(i, i + 1) for i in range(8)]
    assert r.complete and "runs 2, 3, 4, 5, 6, 7, 8: only the thread count" in r.warnings[0]
    eight = [s for s in r.samples if s.params["run"] == 7]
    assert [s.metric for s in eight] == ["memory.triad"] and eight[
        0
    ].value == 130_867.5e6  # line 277 of the file


def test_appended_runs_are_kept_apart_each_with_its_threads():
    r = stream.parse((REAL / "epyc_ipa_gcc_1-96threads_appended.log").read_text(), "a.log")
    assert r.meta["runs"] == 96 and len(r.samples) == 384
    assert {(s.params["run"], s.params["threads"]) for s in r.samples} == {
        (i, i + 1) for i in range(96)
    }


def test_a_failed_run_among_valid_ones_gives_no_rate_and_says_so():
    good = (REAL / "revyos_lpi4a_omp8.txt").read_text()
    bad = (REAL / "qemu_sam460ex_failed.txt").read_text()
    r = stream.parse(good + bad, "two.txt")
    assert [s.params["run"] for s in r.samples] == [0, 0, 0, 0]
    assert r.samples[0].value == 8239.8e6
    assert any("run 2" in w and "failed its validation" in w for w in r.warnings)
    with pytest.raises(ParseError, match="STREAM failed its validation"):
        stream.parse(bad + bad, "both.txt")


def test_stream_mpi_runs_carry_ranks_not_a_made_up_thread_count():
    r = stream.parse((REAL / "epyc_ipa_stream_mpi_1.8_1-96ranks.log").read_text(), "m.log")
    first = r.samples[0]
    assert first.params["ranks"] == 1 and "threads" not in first.params
    assert first.params["elements"] == 10_000_000 and r.meta["version"] == "1.8"


def test_no_table_says_what_was_found():
    text = (REAL / "superbench_zen_32t_v5.10.log").read_text()
    with pytest.raises(ParseError, match=r"no STREAM result table .* \(a STREAM 5\.10 banner\)"):
        stream.parse(text[: text.index("Function")], "cut.txt")
