"""The parsers on corrupted real outputs: each root cause the fuzzing found, as one case.

Every input here is a real fixture with one edit; each test failed before the fix (a crash
other than ParseError, or an impossible value returned as a sample).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from assay.errors import ParseError
from assay.parsers import parse_text
from assay.parsers.numbers import parse_int, parse_number, parse_time, sweep_rows

FIX = Path(__file__).parents[1] / "fixtures"
OSU_LAT = FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out"


def text(rel: str) -> str:
    return (FIX / rel).read_text(errors="replace")


def replace_once(s: str, old: str, new: str) -> str:
    assert old in s, old
    return s.replace(old, new, 1)


@pytest.mark.parametrize(
    "token", ["nan", "inf", "-inf", "Infinity", "8_516.13", "1e999", "9" * 5000, "0x10", "٣"]
)
def test_number_tokens_python_accepts_but_no_tool_prints_are_parse_errors(token: str):
    with pytest.raises(ParseError) as err:
        parse_number(token, source="f.txt", line=7)
    assert str(err.value).startswith("f.txt:7: ")
    with pytest.raises(ParseError):
        parse_int(token, source="f.txt", line=7)


def test_number_readers_keep_what_printf_prints():
    assert parse_number("-1.5e+03", source="f", line=1) == -1500.0
    assert parse_int("4194304", source="f", line=1) == 4194304
    with pytest.raises(ParseError, match="not > 0"):
        parse_time("0.00", source="f", line=1)
    with pytest.raises(ParseError, match="out of range"):
        parse_int("-3", source="f", line=1)


@pytest.mark.parametrize(
    "old,new",
    [
        ("8                       1.02", "8                       -675.03"),
        ("8                       1.02", "8                       1e300"),
        ("8                       1.02", "8                       8_516.13"),
        ("8                       1.02", "8                       nan"),
        ("8                       1.02", "8                       0.00"),
        ("8                       1.02", "inf                     1.02"),
    ],
)
def test_osu_impossible_latency_is_a_parse_error_naming_the_line(old: str, new: str):
    bad = replace_once(OSU_LAT.read_text(), old, new)
    with pytest.raises(ParseError) as err:
        parse_text(bad, "osu", source="lat.out")
    assert "lat.out:7" in str(err.value)  # the row of size 8


def test_a_repeated_row_is_kept_once_and_a_lost_row_is_named():
    lines = OSU_LAT.read_text().splitlines(keepends=True)
    i = next(n for n, ln in enumerate(lines) if ln.startswith("1024 "))
    repeated = "".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
    r = parse_text(repeated, "osu", source="lat.out")
    assert [s.params["size"] for s in r.samples].count(1024) == 1
    assert any("repeats line" in w for w in r.warnings)
    gap = "".join(lines[:i] + lines[i + 1 :])  # the 1024-byte row lost in the middle
    r = parse_text(gap, "osu", source="lat.out")
    assert any("1 row(s)" in w and "size 512" in w and "size 2048" in w for w in r.warnings)
    clean = parse_text(OSU_LAT.read_text(), "osu", source="lat.out")
    assert not any("missing between" in w or "repeats" in w for w in clean.warnings)


def test_a_size_repeated_with_other_values_means_mixed_outputs():
    lines = OSU_LAT.read_text().splitlines(keepends=True)
    i = next(n for n, ln in enumerate(lines) if ln.startswith("1024 "))
    mixed = "".join([*lines[: i + 1], "1024                    9.99\n", *lines[i + 1 :]])
    with pytest.raises(ParseError, match="two outputs mixed"):
        parse_text(mixed, "osu", source="lat.out")


def test_sweep_of_a_users_own_size_list_reports_no_gap():
    rows = [(n, size, None) for n, size in enumerate([1, 3, 10, 100, 1000], start=1)]
    assert sweep_rows(rows, table="t", source="s") == (rows, [])


def test_the_real_fixtures_report_no_false_gap_or_repeat():
    for folder in sorted(p for p in FIX.iterdir() if p.is_dir()):
        fmt = {"gpu_burn": "gpu-burn"}.get(folder.name, folder.name)
        for f in sorted(folder.iterdir()):
            if f.suffix in (".md", ".py") or f.is_dir():
                continue
            try:
                r = parse_text(f.read_text(errors="replace"), fmt, source=f.name)
            except ParseError:
                continue  # the fixtures of failed runs
            noise = [w for w in r.warnings if "missing between" in w or "repeats line" in w]
            assert not noise, (f, noise)


def test_imb_infinite_size_is_a_parse_error():
    s = text("imb/alaska_ompi4_ucx_IMB_PingPong.out")
    line = next(ln for ln in s.splitlines() if ln.strip().startswith("1024 "))
    bad = s.replace(line, line.replace("1024", "1e999", 1), 1)  # float() says inf
    with pytest.raises(ParseError):
        parse_text(bad, "imb", source="x")


def test_nccl_non_numeric_or_huge_token_is_a_parse_error():
    s = text("nccl/ztan-NCCL-test-result")
    line = next(ln for ln in s.splitlines() if ln.split()[:1] == ["1048576"])
    for new in ("10\ufffd48576", "-1e300", "9" * 5000):
        with pytest.raises(ParseError):
            parse_text(s.replace(line, line.replace("1048576", new, 1), 1), "nccl", source="x")


def test_fio_json_missing_key_nan_and_huge_numeral_are_parse_errors():
    raw = text("fio/randread_8k.jsonplus.json")
    doc = json.loads(raw)
    del doc["jobs"][0]["read"]["iops_min"]
    with pytest.raises(ParseError, match="iops_min"):
        parse_text(json.dumps(doc), "fio", source="x")
    with pytest.raises(ParseError):
        parse_text(raw.replace('"iops_min" :', '"iops_min" : NaN, "x" :', 1), "fio", source="x")
    huge = raw.replace('"total_ios" : ', '"total_ios" : ' + "9" * 5000 + ', "y" : ', 1)
    with pytest.raises(ParseError):
        parse_text(huge, "fio", source="x")


def test_ior_cut_after_command_line_and_header_variant_are_parse_errors():
    s = text("ior/exascaler_cloud_3.3.0.txt")
    cut = s[: s.index("Command line") + len("Command line")]
    with pytest.raises(ParseError):
        parse_text(cut, "ior", source="x")
    variant = s.replace("Mean(s)", "Mean(sec)", 1)
    with pytest.raises(ParseError, match="lacks the 'Mean\\(s\\)' column"):
        parse_text(variant, "ior", source="x")


@pytest.mark.parametrize(
    "fmt,rel,old,new",
    [
        ("stream", "stream/revyos_lpi4a_omp8.txt", "Array size = ", "Array size = " + "9" * 5000),
        ("hpcc", "hpcc/hpccoutf.txt", "PTRANS_n=250", "PTRANS_n=" + "9" * 5000),
        ("ior", "ior/exascaler_cloud_3.3.0.txt", "    321 16777216", "    321 " + "9" * 5000),
    ],
)
def test_numerals_over_pythons_int_digit_limit_are_parse_errors(fmt, rel, old, new):
    with pytest.raises(ParseError):
        parse_text(replace_once(text(rel), old, new), fmt, source="x")


def test_vdbench_non_utf8_byte_in_the_totals_header():
    raw = (FIX / "vdbench" / "guide_totals_example.txt").read_bytes()
    # "interval\ufffd" still matches the header pattern but is no "interval" column
    bad = raw.replace(b"interval ", b"interval\xff ", 1).decode("utf-8", errors="replace")
    with pytest.raises(ParseError, match="interval"):
        parse_text(bad, "vdbench", source="x")


def test_a_failed_hpcc_ptrans_is_a_failed_figure_not_a_rate_of_zero():
    s = text("hpcc/hpccoutf.txt")
    s = replace_once(s, "PTRANS_GBs=2.95398", "PTRANS_GBs=0")
    s = replace_once(s, "PTRANS_time=6.672e-05", "PTRANS_time=-1")
    r = parse_text(s, "hpcc", source="x")
    assert not [x for x in r.samples if x.metric == "memory.ptrans"]
    assert any("PTRANS_time=-1" in w for w in r.warnings)
    assert any(f["key"] == "PTRANS_GBs" for f in r.meta["failed"])
    assert all(math.isfinite(x.value) and x.value > 0 for x in r.samples)


@pytest.mark.parametrize(
    "fmt,rel,key,samples",
    [
        ("stream", "stream/revyos_lpi4a_omp8.txt", "Triad:", 4),
        ("mdtest", "mdtest/exascaler_cloud_3.3.0.txt", "File creation", 9),
        ("vdbench", "vdbench/guide_totals_example.txt", "avg_", 12),
    ],
)
def test_a_result_line_printed_twice_counts_once_and_is_named(fmt, rel, key, samples):
    lines = text(rel).splitlines(keepends=True)
    i = next(n for n, ln in enumerate(lines) if ln.lstrip().startswith(key))
    twice = "".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
    r = parse_text(twice, fmt, source="x")
    assert len(r.samples) == samples  # 10 and 16 before: the copy was a second measurement
    assert any(f"repeats line {i + 1}" in w for w in r.warnings)
    other = lines[i].replace("1", "7", 1) if "1" in lines[i] else lines[i].replace("2", "7", 1)
    with pytest.raises(ParseError, match="two outputs mixed"):
        parse_text("".join([*lines[: i + 1], other, *lines[i + 1 :]]), fmt, source="x")


def test_hpcc_size_beside_a_rate_must_be_whole():
    # found by the soak (case 2:91138): "MPIFFT_N=1e-300" became params n=1e-300
    s = replace_once(text("hpcc/hpccoutf.txt"), "MPIFFT_N=", "MPIFFT_N=1e-300\nX=")
    with pytest.raises(ParseError, match="MPIFFT_N 1e-300 is not a whole number"):
        parse_text(s, "hpcc", source="x")
