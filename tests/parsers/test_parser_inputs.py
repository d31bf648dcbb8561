"""Parsers given real outputs edited the ways issue 21 found: a JSON field of another type,
statistics no measurement gives, CR line ends, a very long line, a file that never ends. Each
is refused with a ParseError naming what and where, or read as the tool meant it."""

from __future__ import annotations

import contextlib
import copy
import json
import time
from pathlib import Path

import pytest

from assay.errors import ParseError
from assay.inputfile import MAX_OUTPUT_BYTES
from assay.model import Sample, Stats
from assay.parsers import parse_text
from assay.parsers.base import ParseResult
from assay.parsers.numbers import check_result
from conftest import run_cli

FIX = Path(__file__).parents[1] / "fixtures"
FIO = json.loads((FIX / "fio" / "randread_8k.jsonplus.json").read_text())
REPORT = json.loads((FIX / "assay-json" / "quick_2vcpu_epyc.json").read_text())


def _edited(doc: dict, path: list, value) -> str:
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return json.dumps(out)


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        (["jobs", 0, "jobname"], ["a"], "jobname is ['a'], not a string"),
        (["jobs", 0, "job options"], ["a"], "job options is ['a'], not an object"),
        (["jobs", 0, "job options"], "bs=8k", "not an object"),
        (["jobs", 0, "job options", "bs"], 8192, "job options 'bs' is 8192, not a string"),
        (["global options"], [1], "global options is [1], not an object"),
        (["jobs", 0, "error"], [1], "error is [1], not a number"),
        (["jobs", 0, "groupid"], "0", "groupid is '0', not a number"),
        (["fio version"], [3], "fio version is [3], not a string"),
    ],
)
def test_a_fio_field_of_another_type_is_named(path, value, words) -> None:
    with pytest.raises(ParseError, match=words.replace("[", r"\[").replace("]", r"\]")):
        parse_text(_edited(FIO, path, value), "fio", source="f.json")


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        (["samples", 0, "stats", "min"], "1e-6", "stats.min is '1e-6', not a number"),
        (["samples", 0, "stats", "n"], 1.5, "stats.n 1.5 is not a whole number"),
        (["samples", 0, "stats"], [1], "stats is [1], not an object"),
        (["samples", 0, "metric"], 5, "metric is 5, not a string"),
        (["samples", 0, "unit"], None, "unit is None, not a string"),
        (["samples", 0, "better"], "up", "better is 'up'"),
        (["samples", 0, "value"], "3", "value is '3', not a number"),
        (["samples", 0, "value"], True, "value is True, not a number"),
        (["samples", 0, "params", "size"], {"bytes": 8}, "params.size is {'bytes': 8}"),
        (["samples", 0, "params", "hosts"], [["a"]], "params.hosts is [['a']]"),
        (["samples", 0, "params"], [1], "params is [1], not an object"),
        (["samples", 0], "x", "sample 0 is 'x', not an object"),
        (["run"], "x", "\"run\" is 'x', not an object"),
        (["run", "run_id"], 7, "run.run_id is 7, not a string"),
        (["schema_version"], True, "schema_version True"),
    ],
)
def test_an_assay_json_field_of_another_type_is_named(path, value, words) -> None:
    with pytest.raises(ParseError) as err:
        parse_text(_edited(REPORT, path, value), "assay-json", source="r.json")
    assert words in str(err.value)


def test_a_field_a_newer_assay_adds_is_left_out_not_refused() -> None:
    result = parse_text(_edited(REPORT, ["samples", 0, "stats", "p9999"], 1.0), "assay-json")
    assert "p9999" not in result.samples[0].stats.to_dict()


def test_an_imported_report_with_a_bad_field_is_not_stored_and_report_still_works(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(_edited(REPORT, ["samples", 3, "stats", "min"], "fast"))
    home = tmp_path / "home"
    proc = run_cli("import", "--format", "assay-json", str(bad), home=home, timeout=60)
    assert proc.returncode == 2 and "stats.min is 'fast'" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    good = tmp_path / "good.json"
    good.write_text(json.dumps(REPORT))
    run_cli("import", "--format", "assay-json", str(good), home=home, timeout=60, check=True)
    for fmt in ("md", "json", "csv", "term"):
        run_cli("report", "--format", fmt, home=home, timeout=60, check=True)


# ---------------------------------------------------------------------------- statistics


def _one(stats: Stats, unit: str = "s") -> ParseResult:
    return ParseResult("x", samples=[Sample("x", "p2p.latency", 2e-6, unit, "lower", {}, stats)])


@pytest.mark.parametrize(
    ("stats", "words"),
    [
        (Stats(n=10, min=3e-6, max=2e-6), "min 3e-06 is above max 2e-06"),
        (Stats(n=10, min=1e-6, max=2e-6, mean=5e-6), "mean 5e-06 is above max 2e-06"),
        (Stats(n=10, min=1e-6, max=2e-6, median=0.5e-6), "median 5e-07 is below min 1e-06"),
        (Stats(n=10, min=1e-6, max=2e-6, p99=9e-6), "p99 9e-06 is above max 2e-06"),
        (Stats(n=10, min=1e-6, max=9e-6, p99=5e-6, p999=3e-6), "p99 5e-06 is above p999"),
        (Stats(n=10, min=1e-6, max=2e-6, stddev=5e-6), "stddev 5e-06 is wider than the range"),
    ],
)
def test_statistics_no_measurement_gives_are_refused(stats: Stats, words: str) -> None:
    with pytest.raises(ParseError, match="impossible value") as err:
        check_result(_one(stats), source="t")
    assert words in str(err.value)


def test_possible_statistics_pass_histogram_percentiles_within_a_bin() -> None:
    # fio reports a percentile at the middle of its histogram bin: up to 1/128 past the max
    check_result(_one(Stats(n=5, min=1e-6, max=2e-6, mean=1.5e-6, p99=2.01e-6)), source="t")
    check_result(_one(Stats(n=1, min=2e-6, max=2e-6, mean=2e-6, stddev=0.0)), source="t")


@pytest.mark.parametrize(
    ("fmt", "fixture", "old", "new"),
    [
        # IMB's t_min[usec] t_max[usec]: swapped on one row
        ("imb", "imb/juno_IMB-MPI1_internode.txt", None, None),
        # fio's latency min above its max
        ("fio", "fio/randread_8k.jsonplus.json", '"min" : 41508', '"min" : 99941508'),
    ],
)
def test_impossible_statistics_in_real_outputs_are_refused(fmt, fixture, old, new) -> None:
    text = (FIX / fixture).read_text()
    if fmt == "imb":
        lines = text.splitlines()
        i = next(n for n, ln in enumerate(lines) if ln.split()[:1] == ["1024"] and
                 len(ln.split()) == 6)  # fmt: skip
        size, reps, t_min, t_max, t_avg, bw = lines[i].split()
        lines[i] = "  ".join([size, reps, t_max.replace(".", "9."), t_min, t_avg, bw])
        text = "\n".join(lines) + "\n"
    else:
        text = text.replace(old, new, 1)
    with pytest.raises(ParseError, match="impossible value"):
        parse_text(text, fmt, source=fixture)


# ---------------------------------------------------------------------------- line ends, lines


def test_a_complete_osu_file_with_cr_line_ends_is_complete() -> None:
    text = (FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out").read_text()
    lf = parse_text(text, "osu", source="lf")
    for end in ("\r", "\r\n"):
        other = parse_text(text.replace("\n", end), "osu", source="cr")
        assert other.complete and not other.missing
        assert [s.value for s in other.samples] == [s.value for s in lf.samples]


def test_a_long_hpl_residual_line_is_read_in_linear_time() -> None:
    text = (FIX / "hpl" / "kish29_hpl23_interrupted.txt").read_text()
    head, sep, rest = text.partition("||Ax-b||_oo/")
    assert sep
    for n in (64_000, 200_000):
        started = time.perf_counter()
        with contextlib.suppress(ParseError):  # read or refused: either, in linear time
            parse_text(head + sep + "=" * n + "\n" + rest, "hpl", source="long")
        assert time.perf_counter() - started < 1.0, f"{n} characters"


# ---------------------------------------------------------------------------- sizes


def test_import_reads_at_most_the_stated_size(tmp_path: Path) -> None:
    """``assay import /dev/zero`` (or a file symlinked to it) stops at the bound, names it,
    and the good file beside it is imported."""
    link = tmp_path / "osu_latency.txt"
    link.symlink_to("/dev/zero")
    good = tmp_path / "good.txt"
    good.write_text((FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out").read_text())
    started = time.perf_counter()
    proc = run_cli("import", "--format", "osu", str(link), str(good), home=tmp_path / "h",
                   timeout=120)  # fmt: skip
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1, said
    assert f"larger than {MAX_OUTPUT_BYTES // 2**20} MiB ({MAX_OUTPUT_BYTES} bytes)" in said
    assert "Traceback" not in said
    assert time.perf_counter() - started < 60
    stored = list((tmp_path / "h" / "runs").iterdir())
    assert len(stored) == 1
    sizes = sorted(p.stat().st_size for p in stored[0].glob("jobs/*/stdout"))
    assert sizes == [0, good.stat().st_size]  # the refused file's bytes are not kept


def test_every_input_file_is_read_within_a_bound(tmp_path: Path) -> None:
    from assay.errors import AssayError
    from assay.fio.hosts import read_hostfile
    from assay.suite import resolve_suite
    from assay.vdbench.suite import vdbench_suite

    big = tmp_path / "big"
    with big.open("wb") as f:
        f.truncate(5 * 2**20)  # sparse: 5 MiB of nothing, past the 4 MiB of a text input
    for read in (resolve_suite, vdbench_suite, read_hostfile):
        with pytest.raises(AssayError, match="larger than 4 MiB"):
            read(str(big))


def _edit_line(text: str, starts: str, edit) -> str:
    lines = text.split("\n")
    i = next(n for n, ln in enumerate(lines) if ln.lstrip().startswith(starts))
    lines[i] = edit(lines[i])
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("fmt", "fixture", "starts", "edit"),
    [
        # a lazy name before four figures, a run of blanks inside it and a fifth figure
        ("mdtest", "mdtest/exascaler_cloud_3.3.0.txt", "File creation",
         lambda ln: ln.replace("File creation", "File" + " " * 20_000 + "creation") + " 1"),
        # a lazy benchmark name before "Test", a run of blanks inside it
        ("osu", "osu/alaska_ompi4_ucx_osu_latency.out", "# OSU MPI",
         lambda ln: ln.replace("Latency", "Late" + " " * 100_000 + "ncy")),
        # an HTML tag pattern over a run of "<" that never closes
        ("vdbench", "vdbench/summary_50407_macos.html", "Link to logfile",
         lambda ln: ln + "<" * 100_000),
        # a lazy option name before a colon, a run of blanks and no colon
        ("ior", "ior/exascaler_cloud_3.3.0.txt", "api",
         lambda ln: ln.split(":")[0].rstrip() + " " * 100_000 + "x"),
        # blanks on both sides of a size's suffix, split two ways
        ("fio", "fio/randread_8k.jsonplus.json", '"bs"',
         lambda ln: ln.replace('"8k"', '"8' + " " * 50_000 + '!"')),
        # a lazy value before trailing blanks
        ("hpcc", "hpcc/hpccoutf.txt", "VersionMajor=",
         lambda ln: ln + " " * 50_000 + "x"),
        ("hpl", "hpl/sc14_hpl21.txt", "HPL_pdgesv() start",
         lambda ln: ln.replace("Aug", "Aug" + " " * 50_000)),
        # a lazy verb before the test's kind
        ("perftest", "perftest/mlx4_qdr_ib_send_lat_a.txt", "Send Latency Test",
         lambda ln: ln.replace("Latency", "Lat" + " " * 50_000 + "ency")),
        # blanks that "\s+" and a class holding blanks could share
        ("vdbench", "vdbench/guide_summary_example.txt", "1     833.00",
         lambda ln: ln.replace("1 ", "1" + " " * 50_000, 1) + " x"),
        # a time stamp's fraction and a numeric interval splitting a run of digits
        ("vdbench", "vdbench/stdout_50406_aarch64.txt", "17:46:25.060",
         lambda ln: ln.replace("17:46:25.060", "17:46:25.060" + "0" * 50_000, 1) + " \x7f"),
        # fio's normal output: a percentile's number tried at each digit of a run
        ("fio", "real/fio/vps_2.2.10_normal_randread_5runs.log", "|  1.00th",
         lambda ln: ln.replace("|", "| " + "0" * 50_000, 1)),
    ],
)  # fmt: skip
def test_a_long_run_in_a_line_is_read_in_linear_time(fmt, fixture, starts, edit) -> None:
    """Found by tests/parsers/test_parser_patterns.py: each took seconds to hours before."""
    text = _edit_line((FIX / fixture).read_text(), starts, edit)
    started = time.perf_counter()
    with contextlib.suppress(ParseError):
        parse_text(text, fmt, source=fixture)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("size", [None, [8, 9], ["a"], "", "8", True])
def test_an_assay_json_size_the_report_cannot_use_is_refused(size) -> None:
    """A sample's ``size`` (and the other counted params) null, a list, text or a bool was
    stored, then every report of the run died in int() (TypeError, ValueError)."""
    import json as json_module

    from assay.errors import ParseError
    from assay.parsers import parse_text

    doc = json_module.loads((FIX / "assay-json" / "quick_2vcpu_epyc.json").read_text())
    for s in doc["samples"]:
        if "size" in s["params"]:
            s["params"]["size"] = size
    with pytest.raises(ParseError, match=r"params\.size is .*: not a count"):
        parse_text(json_module.dumps(doc), "assay-json", "x.json")


def test_a_stored_size_the_report_cannot_use_leaves_the_figure_out_of_the_curve() -> None:
    """A run stored before that check: the report goes on (the figure is not on a curve)."""
    from assay.analysis.derived.series import by_series_and_size
    from assay.analysis.statistics.stats import Figure
    from assay.model import Sample

    good = Sample.make("p2p", "p2p.latency", 1e-6, {"size": 8})
    bad = Sample.make("p2p", "p2p.latency", 1e-6, {"size": [8]})
    curves = by_series_and_size([Figure(good, 1, None), Figure(bad, 1, None)], "p2p.latency")
    assert [list(c) for c in curves.values()] == [[8]]
