"""The gpu-burn parser on real gpu_burn output (tests/fixtures/gpu_burn/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import ParseError
from assay.parsers import detect_format, gpu_burn
from conftest import run_cli

FIX = Path(__file__).parents[1] / "fixtures" / "gpu_burn"


def parse(name: str):
    return gpu_burn.parse((FIX / name).read_text(), source=name)


def test_every_fixture_is_detected_as_gpu_burn():
    for f in FIX.glob("*.txt"):
        assert detect_format(f.read_text(), f.name) == "gpu-burn"


def test_two_gpus_rates_are_the_median_of_new_intervals_after_warmup():
    r = parse("issue96_2x_rtx4090_fp32_excerpt.txt")
    gpu0, gpu1 = r.samples
    assert gpu0.metric == gpu1.metric == "gpu.sgemm" and gpu0.unit == "flop/s"
    # GPU 0's counts 81, 162, 162, 324, 405: new intervals 47174, 52502, 52371, 52045;
    # the first (start-up) is left out: median of 52502, 52371, 52045
    assert gpu0.value == 52371e9
    assert (gpu0.stats.min, gpu0.stats.max, gpu0.stats.n) == (52045e9, 52502e9, 3)
    # GPU 1: "0 (0 Gflop/s)" is no measurement; 46929, 51733, 52472, 51946 -> median of last 3
    assert gpu1.value == 51946e9 and gpu1.params["warmup_intervals"] == 1
    assert gpu0.params["gpu_name"] == "NVIDIA GeForce RTX 4090"
    assert gpu0.params["temp_max_c"] == 69
    assert not r.complete  # cut before the OK/FAULTY summary


def test_doubles_are_dgemm_per_gpu_whatever_the_init_order():
    r = parse("issue1_k40m_m4000_fp64_excerpt.txt")
    assert [(s.metric, s.params["gpu"], s.value) for s in r.samples] == [
        ("gpu.dgemm", 0, 74e9),
        ("gpu.dgemm", 1, 423e9),
    ]
    assert r.samples[0].params["temp_max_c"] == 93


def test_a_repeated_progress_line_is_not_a_new_measurement():
    r = parse("issue8_k80_fp32.txt")
    (s,) = r.samples
    # 636 twice counts once; the first interval (start-up) is left out: 2273 as printed
    assert s.stats.n == 1 and s.value == 2273e9 and s.params["warmup_intervals"] == 1


def test_faulty_gpus_give_no_rate_and_say_why():
    # no GPU has a rate to keep: refused, the message naming each GPU's verdict
    with pytest.raises(
        ParseError, match=r"any of its 16 GPU\(s\) \(GPU 0, 1, .*15: gpu_burn says FAULTY"
    ):
        parse("issue12_16gpu_faulty.txt")


def test_ok_without_any_progress_line_is_no_measurement():
    with pytest.raises(ParseError, match="GPU 0: no GEMM finished: gpu_burn measured nothing"):
        parse("issue124_a2000_ok_without_progress.txt")


def test_errors_without_summary_withhold_the_rate():
    text = (FIX / "issue124_a500_fp32.txt").read_text()
    bad = text.replace("(3519 Gflop/s)   errors: 0", "(3519 Gflop/s)   errors: 12", 1)
    with pytest.raises(ParseError, match="GPU 0: 12 wrong elements"):
        gpu_burn.parse(bad, source="x")


def test_a_gemm_count_going_down_means_mixed_outputs():
    text = (FIX / "issue124_a500_fp32.txt").read_text().replace("proc'd: 30 ", "proc'd: 5 ", 1)
    with pytest.raises(ParseError, match="went down"):
        gpu_burn.parse(text, source="x")


def test_reframe_variant_by_its_sanity_pattern():
    # No real ReFrame output was found (README): the line follows ReFrame's own regex.
    text = (
        "[nid00001] GPU  0(OK): 3412 GF/s  62 Celsius\n"
        "[nid00001] GPU  1(FAULTY): 10 GF/s  70 Celsius\n"
    )
    r = gpu_burn.parse(text, source="x")
    (s,) = r.samples
    assert s.metric == "gpu.burn" and s.value == 3412e9 and s.params["host"] == "nid00001"
    assert r.meta["failed"][0]["gpu"] == 1


def test_import_format_gpu_burn_through_the_cli(assay_home: Path):
    files = [FIX / "issue96_2x_rtx4090_fp32_excerpt.txt", FIX / "issue12_16gpu_faulty.txt"]
    proc = run_cli("import", "--format", "gpu-burn", *map(str, files), home=assay_home)
    assert proc.returncode == 1, proc.stderr  # the FAULTY file is named as failed
    assert "FAULTY" in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    assert sorted(s["value"] for s in doc["samples"]) == [51946e9, 52371e9]
