"""The GPU probes' real output: what assay's own probes printed on an NVIDIA H100 80GB HBM3
(driver 580.159.04, CUDA 13.0), 27 November 2026, kept whole in
``tests/fixtures/gpu/h100-2026-11-27/`` (its README says how each file was made). CI has no GPU:
these tests read, store, report and judge what the card measured.

Every figure asserted here was read by hand from the stored JSON Lines (the README lists them).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assay.analysis.statistics.stats import fold_repetitions
from assay.model import Job
from assay.parsers.nccl import parse as parse_nccl_tests
from assay.probes import get_probe
from assay.report.plots import of_run
from assay.report.plots.draw import to_svg
from conftest import run_cli

H100 = Path(__file__).parents[1] / "fixtures" / "gpu" / "h100-2026-11-27"
GPU_RUN, FAULT_RUN = "20261127-204415-9874ce011", "20261127-205031-296f9d078"
BURN_JOB = "001-gpu_burn-fp64-fp32-tf32-fp16-bf16-30-s-on-gpu-0"
CARD = "0: NVIDIA H100 80GB HBM3"


def _home_with(assay_home: Path, *runs: tuple[str, str]) -> Path:
    """An ASSAY_HOME holding the recorded runs (folder in the fixture, run id)."""
    for folder, run_id in runs:
        shutil.copytree(H100 / folder, assay_home / "runs" / run_id)
    return assay_home


def _burn_samples(folder: str = "run-gpu", job: str = BURN_JOB) -> list:
    stdout = (H100 / folder / "jobs" / job / "stdout").read_text()
    params = json.loads((H100 / folder / "jobs" / job / "job.json").read_text())["params"]
    return get_probe("gpu_burn").parse(stdout, Job(job, "gpu_burn", ["{exe}"], params))


def test_the_h100_run_reports_the_figures_the_card_measured(assay_home: Path):
    """``assay report`` of the first run on the card, as the README shows it: per precision
    the mean of the measured intervals (min-max), OK, the clocks, power and temperature NVML
    read; then STREAM on HBM3 and the transfers."""
    _home_with(assay_home, ("run-gpu", GPU_RUN))
    md = run_cli("report", GPU_RUN, "-f", "md", home=assay_home, check=True).stdout
    for row in (
        "fp64 | 55.3 | 54.9–55.7 | 24 | 0 | OK | 1530–1860 | 2619 | 697 (706) | 69 |",
        "fp32 | 51.6 | 51.6–51.6 | 29 | 0 | OK | 1980 | 2619 | 658 (663) | 71 |",
        "tf32 | 377.0 | 374.2–379.4 | 24 | 0 | OK | 1305–1950 | 2619 | 694 (709) | 73 |",
        "fp16 | 697.2 | 694.0–700.5 | 23 | 0 | OK | 1275–1935 | 2619 | 694 (711) | 74 |",
        "bf16 | 731.4 | 727.0–734.2 | 24 | 0 | OK | 1290–1950 | 2619 | 694 (707) | 75 |",
        "STREAM triad | 2898.7 | 2872.4–2898.7 | 19 | 86.5% |",
        "host→device pinned 1 GiB | 52.5 | 51.9–52.8 | 10 | – |",
        "device→host pageable 1 GiB | 10.8 | 10.4–11.5 | 10 | – |",
    ):
        assert f"| {CARD} | {row}" in md, row
    # the card ran at its 700 W cap (NVML reason 0x4) in every precision but FP32
    assert (
        f"GPU {CARD}: clocks held back by SW power cap (NVML clock-event reasons 0x4) in fp64, "
        "tf32, fp16, bf16"
    ) in md
    assert "Other measurements" not in md  # the series is drawn, not listed
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    shown = [line for line in readme.splitlines() if line.startswith(f"| {CARD} |")]
    assert len(shown) == 10 and all(line in md for line in shown)  # the README's is this run's
    assert "NCCL collectives need 2 GPUs or more, this node has 1: skipped" in md


def test_the_burn_series_holds_every_interval_on_one_time_axis():
    """One gpu.trace per interval, warm-up ones too, each with the NVML means over it; the
    precisions follow one another on the probe's clock."""
    trace = [s for s in _burn_samples() if s.metric == "gpu.trace"]
    per = {p: [s for s in trace if s.params["precision"] == p] for p in ("fp64", "fp32", "bf16")}
    assert [len(v) for v in per.values()] == [26, 31, 26]  # 2 warm-up + 24, 29, 24 measured
    fp64 = per["fp64"]
    assert [s.params["phase"] for s in fp64[:3]] == ["warm-up", "warm-up", "measured"]
    assert [s.params["interval"] for s in fp64[:3]] == [0, 1, 2]
    first = fp64[0].params  # read by hand: 55.4 TFLOP/s, 1.15 s, 438 W, 1720 MHz
    assert fp64[0].value == pytest.approx(55.4e12, rel=1e-3)
    assert first["interval_s"] == pytest.approx(1.153, abs=1e-3)
    assert first["power_w"] == pytest.approx(438, abs=1) and first["sm_clock_hz"] > 1.7e9
    times = [s.params["t_s"] for s in trace]
    assert times == sorted(times) and per["fp32"][0].params["t_s"] > fp64[-1].params["t_s"]
    # the measured intervals' rates are those the figure folds: their mean is gpu.flops
    measured = [s.value for s in fp64 if s.params["phase"] == "measured"]
    flops = next(s for s in _burn_samples() if s.metric == "gpu.flops")
    assert sum(measured) / len(measured) == pytest.approx(flops.value, rel=1e-9)


def test_the_burn_series_is_plotted_rate_clock_power_and_temperature():
    figures = fold_repetitions(_burn_samples())
    (chart,) = of_run.gpu_trace_charts(figures)
    assert chart.section == "gpu-burn"
    svg = to_svg(chart.make())
    for text in ("TFLOP/s", "SM clock (MHz)", "power (W)", "temperature", "GPU 0 bf16"):
        assert text in svg, text


def test_one_flipped_bit_in_one_product_is_caught(assay_home: Path):
    """``--corrupt-for-test`` on the card: mantissa bit 4 of one element of one product
    flipped (16 ulps, past the 4-ulp tolerance). The comparison counted exactly that element
    in each precision, the card is FAULTY, the job failed with exit 3 and kept its figures."""
    errors = [
        s
        for s in _burn_samples("run-fault", "001-gpu_burn-fp64-fp32-bf16-3-s-on-gpu-0")
        if s.metric == "gpu.errors"
    ]
    assert [(s.params["precision"], s.value, s.params["verdict"]) for s in errors] == [
        ("fp64", 1.0, "FAULTY"),
        ("fp32", 1.0, "FAULTY"),
        ("bf16", 1.0, "FAULTY"),
    ]
    assert errors[0].params["compared_elements"] == 11475615744
    _home_with(assay_home, ("run-fault", FAULT_RUN))
    md = run_cli("report", FAULT_RUN, "-f", "md", home=assay_home, check=True).stdout
    assert f"| {CARD} | bf16 | 735.7 | 735.7–735.7 | 1 | 1 | FAULTY |" in md
    assert "fp64: FAULTY, 1 of 11,475,615,744 elements compared differ from the first" in md
    assert "exit code 3" in md


def test_assays_nccl_probe_and_nccl_tests_meet_on_the_same_card():
    """ncclbench and nccl-tests' all_reduce_perf on the same H100, one rank: the same metric
    names, and from 32 MiB up (a device copy, bandwidth-bound) times within 1 %."""
    ours = get_probe("nccl").parse(
        (H100 / "ncclbench-1gpu.jsonl").read_text(), Job("001", "nccl", ["{exe}"], {})
    )
    ref = parse_nccl_tests(
        (H100.parents[1] / "real" / "nccl" / "assay_lease_h100_1gpu_all_reduce.txt").read_text()
    ).samples

    def times(samples: list) -> dict[int, float]:
        return {
            s.params["size"]: s.value
            for s in samples
            if s.metric == "gpu.nccl.all_reduce.time" and s.params["buffers"] == "out-of-place"
        }

    mine, theirs = times(ours), times(ref)
    big = [size for size in mine if size >= 32 << 20]
    assert len(big) == 6 and set(big) <= set(theirs)
    for size in big:
        assert mine[size] == pytest.approx(theirs[size], rel=0.01), size
    assert mine[1 << 30] == pytest.approx(713.35e-6, rel=1e-4)  # read by hand


def test_two_gpu_runs_compare_figure_by_figure_and_the_series_is_not_judged():
    """Every GPU figure has its own key (card, STREAM kernel, pinned or pageable, size), so a
    run compared with another pairs each one; the burn's per-interval points are not judged."""
    from assay.analysis.compare.verdict import compare_runs, measured

    mem_job = "002-gpu_mem-stream-transfers-peers-on-gpu-0"
    stdout = (H100 / "run-gpu" / "jobs" / mem_job / "stdout").read_text()
    mem = get_probe("gpu_mem").parse(stdout, Job(mem_job, "gpu_mem", ["{exe}"], {"gpus": [0]}))
    figures = measured(_burn_samples() + mem)
    result = compare_runs(figures, figures)
    assert result.ambiguous == [] and result.unmatched == [] and result.missing == []
    compared = {
        (r.metric, dict(r.params).get("kernel", dict(r.params).get("memory"))) for r in result.rows
    }
    assert {("gpu.bandwidth", k) for k in ("copy", "scale", "add", "triad")} <= compared
    assert ("gpu.h2d", "pageable") in compared and ("gpu.d2h", "pinned") in compared
    assert len([r for r in result.rows if r.metric in ("gpu.h2d", "gpu.d2h")]) == 12
    assert not any(r.metric == "gpu.trace" for r in result.rows)
    assert {r.verdict for r in result.rows} == {"same"}


def test_the_summary_gives_the_charmed_hpc_pages_gpu_rows(assay_home: Path):
    """The seed's "Tesla T4 single precision, 1x ..., 4454, Gflops/s" rows, from the card:
    single then double precision, then the tensor-core precisions, each with how it was made."""
    _home_with(assay_home, ("run-gpu", GPU_RUN))
    md = run_cli("summary", GPU_RUN, "-f", "md", home=assay_home, check=True).stdout
    rows = [line for line in md.splitlines() if line.startswith("| NVIDIA H100")]
    assert [r.split(" | ")[0] for r in rows] == [
        f"| NVIDIA H100 80GB HBM3 {words}"
        for words in ("single precision", "double precision", "TF32 (tensor cores)",
                      "FP16 (tensor cores)", "BF16 (tensor cores)")
    ]  # fmt: skip
    assert "| 1x vm | 51.63 | TFLOP/s | 8192×8192 GEMM, 30 s |" in rows[0]
    assert "| 55.28 | TFLOP/s |" in rows[1]
