"""GPU probes without a GPU: the CUDA sources compile and link with the real nvcc, the GPU-less
path is a clean skip, and results are read, reported and judged.

What is NOT real output here: the JSON Lines below were written by hand to the probes' output
contract, for two GPUs; the probes' own output on a real card is read in test_gpu_h100.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from assay.analysis.statistics.stats import fold_repetitions
from assay.model import Build, Job, System
from assay.probes import PlanContext, get_probe
from assay.probes.cuda import COMPILE_CHECK_CAPS, cuda_build, gencode_flags, no_gpu_reason
from assay.report.gpu import gpu_tables
from assay.system import Context
from assay.system.gpu import cuda, find_nvcc, nvcc_version, parse_gpu_rows
from assay.toolchain import build_probe
from assay.units import metric_info
from conftest import kept_cache, run_cli

HAS_GPU = shutil.which("nvidia-smi") is not None
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_cap": "9.0"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both probes, compiled and linked by the real nvcc for one architecture (CI has no GPU
    but has nvcc: a missing nvcc is a failure, not a skip); kept between runs of the Makefile's
    test targets (conftest.kept_cache: keyed by sources, flags and nvcc), apart from the probes
    every test's home borrows (a megabyte each)."""
    if find_nvcc() is None:
        pytest.fail("nvcc not found ($CUDA_HOME/bin, PATH, /usr/local/cuda/bin): install CUDA")
    cache = kept_cache(tmp_path_factory, "cuda")
    builds = {
        "gpuburn": cuda_build("gpuburn.cu", list(COMPILE_CHECK_CAPS), ("-lcublas", "-ldl")),
        "gpumem": cuda_build("gpumem.cu", list(COMPILE_CHECK_CAPS)),
        "ncclbench": cuda_build("ncclbench.cu", list(COMPILE_CHECK_CAPS), ("-lnccl",)),
    }
    # at once: one after another the three nvcc took 20 s here, at once 9 s (2 cores)
    with ThreadPoolExecutor(len(builds)) as pool:
        done = {name: pool.submit(build_probe, b, [], cache) for name, b in builds.items()}
    return {name: future.result() for name, future in done.items()}


def _run(exe: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("probe", ["gpuburn", "gpumem", "ncclbench"])
def test_cuda_probes_compile_link_and_answer_help_and_bad_args(built, probe):
    exe = built[probe]
    assert exe.exists() and "-gencode" in (exe.parent / "build.txt").read_text()
    helped = _run(exe, "--help")
    assert helped.returncode == 0 and "usage:" in helped.stdout
    bad = _run(exe, {"gpumem": "--reps", "gpuburn": "--n", "ncclbench": "--iters"}[probe], "10k")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith(f"{probe}: ") and "10k" in bad.stderr
    # probe.h's option table: an unknown option is named as such, not "needs a value"
    unknown = _run(exe, "--bogus")
    assert unknown.returncode == 2
    assert unknown.stderr == f"{probe}: unknown option '--bogus' (see --help)\n"
    # a malformed --gpus is a bad command line (2), found before any GPU is looked for (not 1)
    gpus = _run(exe, "--gpus", "0,x")
    assert gpus.returncode == 2 and gpus.stdout == "", gpus.stderr
    assert gpus.stderr.startswith(f"{probe}: --gpus: expected each item") and "'x'" in gpus.stderr


@pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU: no GPU-less failure to see")
@pytest.mark.parametrize("probe", ["gpuburn", "gpumem", "ncclbench"])
def test_without_a_gpu_the_binaries_exit_1_naming_why(built, probe):
    # Sizes in bytes take probe.h's K/M/G suffixes: these arguments are good, the GPU is missing.
    args = {"gpumem": ["--sizes", "1M,64M"], "ncclbench": ["--max-bytes", "1G"]}.get(probe, [])
    proc = _run(built[probe], *args, "--gpus", "0")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith(f"{probe}: no usable GPU"), proc.stderr


def test_a_compile_error_is_shown_verbatim(tmp_path: Path):
    if find_nvcc() is None:
        pytest.fail("nvcc not found: install CUDA")
    with pytest.raises(Exception) as err:
        build_probe(Build("gpuburn.cu", "nvcc", ("-gencode", "arch=compute_1,code=sm_1")), [],
                    tmp_path)  # fmt: skip
    assert "nvcc" in str(err.value) and "compute_1" in str(err.value)


@pytest.mark.skipif(HAS_GPU, reason="this machine has a GPU: no skip to see")
def test_gpu_suite_without_a_gpu_is_skipped_and_the_run_completes(assay_home: Path):
    proc = run_cli("run", "gpu", home=assay_home)
    assert proc.returncode == 0, proc.stderr
    assert "3 skipped" in proc.stderr and "no GPU found (nvidia-smi" in proc.stderr
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home).stdout)
    assert [j["status"] for j in doc["jobs"]] == ["skipped"] * 3
    assert doc["run"]["status"] == "complete"


def test_doctor_lists_gpus_and_the_cuda_compiler(assay_home: Path):
    proc = run_cli("doctor", home=assay_home)
    assert proc.returncode == 0, proc.stderr
    assert "CUDA compiler" in proc.stdout and "GPU" in proc.stdout
    nvcc = find_nvcc()
    if nvcc:
        text = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
        assert f"nvcc {nvcc_version(text)}" in proc.stdout


def test_nvcc_version_reads_this_machines_nvcc():
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.fail("nvcc not found: install CUDA")
    text = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    version = nvcc_version(text)
    assert version and version.count(".") >= 1 and version.split(".")[0].isdigit()


def test_find_nvcc_order_cuda_home_then_path_then_default():
    exists = {"/opt/cuda/bin/nvcc", "/usr/bin/nvcc", "/usr/local/cuda/bin/nvcc"}.__contains__
    env = {"CUDA_HOME": "/opt/cuda"}
    assert find_nvcc(env, lambda _: "/usr/bin/nvcc", exists) == "/opt/cuda/bin/nvcc"
    assert find_nvcc({}, lambda _: "/usr/bin/nvcc", exists) == "/usr/bin/nvcc"
    assert find_nvcc({}, lambda _: None, exists) == "/usr/local/cuda/bin/nvcc"
    assert find_nvcc({}, lambda _: None, lambda _: False) is None


def test_gpu_inventory_from_nvidia_smi_query():
    # Rows in the shape nvidia-smi prints for this query (not captured from a real card).
    text = (
        "0, NVIDIA H100 80GB HBM3, GPU-5c1f, 00000000:19:00.0, 81559, 580.65.06, 1980, 2619, "
        "700.00, 9.0\n"
        "1, Tesla T4, GPU-aa, 00000000:3B:00.0, 15360, 580.65.06, 1590, 5001, [N/A], 7.5\n"
    )
    rows = parse_gpu_rows(text)
    assert [r["compute_cap"] for r in rows] == ["9.0", "7.5"]
    assert rows[0]["memory_bytes"] == 81559 * 2**20 and rows[0]["clock_max_hz"] == 1980e6
    assert rows[1]["power_limit_w"] is None and rows[1]["index"] == 1

    calls: list[list[str]] = []

    def fake_run(argv):
        calls.append(list(argv))
        if "-q" in argv:
            return "Driver Version                            : 580.65.06\nCUDA Version : 13.0\n"
        return "Cuda compilation tools, release 13.0, V13.0.88\n"

    ctx = Context(root=Path("/nonexistent"), run=fake_run, which=lambda n: f"/usr/bin/{n}")
    facts = cuda(ctx)
    assert facts["driver"] == "580.65.06" and facts["cuda_version"] == "13.0"


def test_plan_builds_for_the_cards_compute_capabilities():
    system = System(gpus=[H100, {**H100, "index": 1}, {"index": 2, "compute_cap": "8.0"}])
    probe = get_probe("gpu_burn")
    (draft,) = probe.drafts(probe.Params(duration=5), PlanContext(system), mpis=[], ranks=None)
    assert draft.skip_reason is None
    assert draft.build.toolchain == "nvcc" and "-lcublas" in draft.build.libs
    assert draft.build.flags[-4:] == (
        "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
    )  # fmt: skip
    assert draft.argv[draft.argv.index("--duration") + 1] == "5.0"
    assert draft.timeout >= 5 * 5
    assert gencode_flags(["9.0", None]) == ("-arch=native",)


def test_plan_skips_without_a_gpu_or_a_named_gpu_missing():
    for name in ("gpu_burn", "gpu_mem", "nccl"):
        probe = get_probe(name)
        (draft,) = probe.drafts(probe.Params(), PlanContext(System()), mpis=[], ranks=None)
        assert draft.skip_reason == "no GPU found (nvidia-smi not found): GPU job skipped"
        (draft,) = probe.drafts(
            probe.Params(gpus=[3]), PlanContext(System(gpus=[H100])), mpis=[], ranks=None
        )
        assert "GPU 3 not found" in (draft.skip_reason or "")
    nccl = get_probe("nccl")
    (one,) = nccl.drafts(nccl.Params(), PlanContext(System(gpus=[H100])), mpis=[], ranks=None)
    assert "need 2 GPUs or more, this node has 1" in (one.skip_reason or "")
    two = System(gpus=[H100, {**H100, "index": 1}])
    (both,) = nccl.drafts(nccl.Params(), PlanContext(two), mpis=[], ranks=None)
    assert both.skip_reason is None and both.build.libs == ("-lnccl",)
    assert "driver" in (no_gpu_reason(System(tools={"nvidia-smi": "/usr/bin/nvidia-smi"})) or "")


# *-contract-example.jsonl: written by hand to gpuburn.cu's and gpumem.cu's output contract,
# NOT the probes' real output: kept for what one card cannot show (two GPUs, peer copies, a
# FAULTY card beside an OK one). The real output of one H100 is read in test_gpu_h100.py.
FIXTURES = Path(__file__).parents[1] / "fixtures" / "gpu"
BURN_LINES = (FIXTURES / "gpuburn-contract-example.jsonl").read_text()
MEM_LINES = (FIXTURES / "gpumem-contract-example.jsonl").read_text()


def _job(probe: str) -> Job:
    return Job(job_id="001", probe=probe, argv=["{exe}"], params={"gpus": [0], "n": 8192})


def test_parse_and_report_burn_and_memory_samples():
    burn = get_probe("gpu_burn").parse(BURN_LINES, _job("gpu_burn"))
    mem = get_probe("gpu_mem").parse(MEM_LINES, _job("gpu_mem"))
    assert all("gpus" not in s.params for s in burn + mem)
    flops = burn[0]
    assert flops.unit == "flop/s" and flops.better == "higher" and flops.stats.n == 28
    assert metric_info("gpu.errors").better == "lower"
    assert {s.unit for s in mem} == {"B/s"}

    tables = {t.key: t for t in gpu_tables(fold_repetitions(burn + mem))}
    rows = tables["gpu-burn"].rows
    assert rows[0][:7] == [
        "0: NVIDIA H100 80GB HBM3", "fp64", "52.1", "51.0–53.0", "28", "0", "OK"
    ]  # fmt: skip
    assert rows[0][7] == "1455–1620" and rows[0][9] == "690 (700)" and rows[0][10] == "70"
    assert rows[1][1] == "bf16" and rows[1][6] == "FAULTY"
    notes = " ".join(tables["gpu-burn"].notes)
    assert "FAULTY" in notes and "held back by SW power cap (NVML clock-event reasons 0x4)" in notes
    mem_rows = tables["gpu-memory"].rows
    assert mem_rows[0][:3] == ["0: NVIDIA H100 80GB HBM3", "STREAM triad", "2990.0"]
    assert mem_rows[0][-1] == "89.2%"
    assert mem_rows[1][1] == "host→device pinned 1 GiB" and mem_rows[1][2] == "54.6"
    assert mem_rows[2][1].startswith("GPU 0→GPU 1 (peer)")
    assert gpu_tables([]) == []


def test_nccl_samples_carry_the_nccl_tests_parser_names_and_units():
    text = (FIXTURES / "ncclbench-contract-example.jsonl").read_text()
    samples = get_probe("nccl").parse(text, _job("nccl"))
    by_metric = {s.metric: s for s in samples}
    assert by_metric["gpu.nccl.all_reduce.busbw"].unit == "B/s"
    assert by_metric["gpu.nccl.all_reduce.time"].unit == "s"
    assert by_metric["gpu.nccl.all_reduce.time"].better == "lower"
    # algbw = size / time, as nccl-tests defines it
    time_s = by_metric["gpu.nccl.all_reduce.time"].value
    algbw = by_metric["gpu.nccl.all_reduce.algbw"]
    assert algbw.value == pytest.approx(algbw.params["size"] / time_s, rel=1e-3)


def test_the_report_shows_the_gpu_tables_and_no_gpu_figure_falls_to_other():
    from pathlib import Path

    from assay.model import RunInfo, System
    from assay.report.build import build_tables
    from assay.store.rundir import LoadedRun

    burn = get_probe("gpu_burn").parse(BURN_LINES, _job("gpu_burn"))
    mem = get_probe("gpu_mem").parse(MEM_LINES, _job("gpu_mem"))
    run = LoadedRun(
        RunInfo("r", "2026-11-23T00:00:00Z", "gpu"), Path("."), System(), samples=burn + mem
    )
    keys = [t.key for t in build_tables(run)]
    assert "gpu-burn" in keys
    assert not any(k.startswith("other") for k in keys), keys


def test_the_gpu_throughput_chart_draws_every_card_and_flags_the_faulty() -> None:
    """Bars per card and precision, from assay's probe output (its contract example, then the
    same card judged FAULTY) and from a real gpu_burn output of two RTX 4090s (wilicc/gpu-burn
    issue 96) imported."""
    from assay.analysis.derived.derive import derive
    from assay.parsers.gpu_burn import parse
    from assay.report.plots import of_run
    from assay.report.plots.draw import to_svg

    burn = fold_repetitions(get_probe("gpu_burn").parse(BURN_LINES, _job("gpu_burn")))
    (chart,) = [c for c in of_run.charts_of(burn, derive(burn)) if c.key == "plot-gpu-burn"]
    assert chart.section == "gpu-burn"
    svg = to_svg(chart.make())
    assert "GPU 0 fp64" in svg and "FAULTY" not in svg  # the example's card passed
    bad_lines = BURN_LINES.replace('"verdict": "OK"', '"verdict": "FAULTY"')
    assert bad_lines != BURN_LINES
    bad = fold_repetitions(get_probe("gpu_burn").parse(bad_lines, _job("gpu_burn")))
    (chart,) = of_run.gpu_charts(bad)
    assert "FAULTY: wrong products" in to_svg(chart.make())  # the flagged bars' legend
    real = FIX_BURN / "issue96_2x_rtx4090_fp32_excerpt.txt"
    (chart,) = of_run.gpu_charts(fold_repetitions(parse(real.read_text()).samples))
    svg = to_svg(chart.make())
    assert "GPU 0 fp32" in svg and "GPU 1 fp32" in svg and "FAULTY" not in svg


FIX_BURN = Path(__file__).parents[1] / "fixtures" / "gpu_burn"
