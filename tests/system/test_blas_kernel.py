"""Issue 19: the BLAS kernels that ran, a better kernel where OpenBLAS falls back (with the real
OpenBLAS: ``ASSAY_SIMULATE_OPENBLAS_CORE=Prescott`` makes OpenBLAS's own pick its Prescott
kernels, as on a CPU it does not know; a user's ``OPENBLAS_CORETYPE=Prescott`` is the user's
choice and is kept), the "BLAS fallback kernel" flag and the kernel named in every format."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import pytest
from test_dgemm import needs_openblas

from assay.model import MpiInfo, System
from assay.probes import PlanContext, get_probe
from assay.system import collect_system
from assay.system.blas import OpenBlasFacts, read_openblas, try_core
from assay.system.blaskernel import advise, below_isa, isa_level
from assay.system.facts import PlanFacts
from conftest import run_cli

AVX512 = ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl"]
AVX2 = ["sse4_2", "avx", "avx2", "fma"]
FALLBACK = "BLAS fallback kernel: not the CPU's peak"


def this_cpu() -> System:
    system = collect_system()
    if isa_level(system.isa) is None or isa_level(system.isa) < 1:
        pytest.skip(f"this CPU's flags ({system.isa}) leave no kernel above Prescott's")
    return system


# --- the pure choice --------------------------------------------------------------------------


def test_a_fallback_core_gets_the_best_core_its_isa_allows_by_names_openblas_accepts():
    advice = advise(AVX512, "Intel", "Prescott")  # Emerald Rapids on Debian's 0.3.21
    assert advice.try_cores == ("SkylakeX", "Haswell", "Sandybridge")
    assert "Prescott (SSE3 kernels) on a CPU with AVX-512" in advice.reason
    assert advise(AVX2, "AMD", "Core2").try_cores == ("Zen", "Sandybridge")  # never Bulldozer
    assert advise(AVX512, "AMD", "Cooperlake").try_cores == ()  # its own pick is right
    assert advise(AVX512, "Intel", "SkylakeX").try_cores == ()
    assert advise(None, "Intel", "Prescott").try_cores == ()  # flags unknown: no advice
    assert below_isa("Haswell", AVX512) == "Haswell (AVX2 kernels) on a CPU with AVX-512"
    assert below_isa("Zen", AVX2) is None and below_isa("Prescott", ["asimd"]) is None


# --- the real OpenBLAS ------------------------------------------------------------------------


def test_real_openblas_simulated_fallback_is_seen_and_a_better_core_checked():
    needs_openblas()
    system = this_cpu()
    env = {**os.environ, "ASSAY_SIMULATE_OPENBLAS_CORE": "Prescott"}
    env.pop("OPENBLAS_CORETYPE", None)
    facts = read_openblas(system.isa, system.vendor, env)
    assert facts is not None and facts.version, facts
    assert facts.detected == "Prescott" and facts.simulated == "Prescott"
    best = facts.verified
    assert best is not None, facts.tried
    assert below_isa(best, system.isa) is None  # the CPU's own level, checked exact
    # its own pick, unsimulated, is left alone when it matches the CPU
    own = read_openblas(
        system.isa, system.vendor, {k: v for k, v in env.items() if "SIMUL" not in k}
    )
    assert own is not None and own.detected != "Prescott"


def test_a_core_whose_instructions_the_cpu_lacks_is_a_no_not_a_crash():
    needs_openblas()
    flags = Path("/proc/cpuinfo").read_text()
    if " fma4" in flags or "x86_64" not in os.uname().machine:
        pytest.skip("this CPU runs Bulldozer's FMA4 kernels")
    assert try_core(os.environ, "Bulldozer") == "killed by SIGILL"


# --- the plan: env applied by the drafts, the user's setting kept ----------------------------


def _ctx(blas: OpenBlasFacts) -> PlanContext:
    system = System(cores=2, threads=2, memory_bytes=8 * 2**30, isa=AVX512, vendor="Intel",
                    microarchitecture="emeraldrapids", freq_base_hz=2.3e9)  # fmt: skip
    mpi = MpiInfo(name="openmpi", flavor="openmpi", version="4.1.4", mpicc="mpicc",
                  launcher="mpirun")  # fmt: skip
    facts = PlanFacts(blas=blas, programs={"hpcc": "/usr/bin/hpcc"})
    return PlanContext(system=system, mpis=[mpi], facts=facts)


@pytest.mark.parametrize("probe", ["dgemm", "hpl", "hpcc"])
def test_every_blas_job_gets_the_checked_core_unless_the_user_chose(probe: str):
    fallback = OpenBlasFacts(version="0.3.21", detected="Prescott", tried={"Haswell": "ok"},
                             advice="OpenBLAS picked Prescott (SSE3 kernels)")  # fmt: skip
    p = get_probe(probe)
    ctx = _ctx(fallback)
    [draft] = p.drafts(p.Params(), ctx, mpis=ctx.mpis, ranks=None)[:1]
    assert draft.env["OPENBLAS_CORETYPE"] == "Haswell"
    assert draft.params["blas_kernel_choice"] == "assay"
    assert draft.params["blas_core_detected"] == "Prescott"
    user = OpenBlasFacts(version="0.3.21", detected="Prescott", user={"OPENBLAS_CORETYPE": "Core2"})
    [draft] = p.drafts(p.Params(), _ctx(user), mpis=ctx.mpis, ranks=None)[:1]
    assert "OPENBLAS_CORETYPE" not in draft.env  # the user's own value reaches the job
    assert draft.params["blas_kernel_choice"] == "user"
    failed = OpenBlasFacts(version="0.3.21", detected="Prescott",
                           tried={"SkylakeX": "killed by SIGILL"})  # fmt: skip
    [draft] = p.drafts(p.Params(), _ctx(failed), mpis=ctx.mpis, ranks=None)[:1]
    assert "OPENBLAS_CORETYPE" not in draft.env
    assert (
        "no better core computed right (SkylakeX: killed by SIGILL)"
        in (draft.params["blas_kernel_reason"])
    )


# --- whole runs, every report format ----------------------------------------------------------


def _run(assay_home: Path, tmp_path: Path, env: dict[str, str], hpl: bool = False) -> dict:
    suite = tmp_path / "blas.toml"
    text = (
        'name = "blas"\n[[bench]]\nprobe = "dgemm"\n'
        'params = { n = 1024, precision = "d", min_time = 0.3 }\n'
    )
    if hpl:
        text += '[[bench]]\nprobe = "hpl"\nmpi = "openmpi"\nparams = { n = 1536, nb = 128 }\n'
    suite.write_text(text)
    done = run_cli("run", str(suite), home=assay_home, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    reports = {
        fmt: run_cli("report", "-f", fmt, home=assay_home, check=True).stdout
        for fmt in ("term", "md", "html", "json")
    }
    reports["html"] = html.unescape(reports["html"])  # the text as a browser shows it
    return reports


def _rates(json_text: str) -> dict[str, dict]:
    doc = json.loads(json_text)
    return {
        s["metric"]: s for s in doc["samples"] if s["metric"] in ("compute.dgemm", "compute.hpl")
    }


@pytest.mark.slow
def test_a_simulated_fallback_runs_the_checked_core_and_every_format_names_it(
    assay_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A machine whose environment sets OPENBLAS_CORETYPE (the user's choice, which assay
    keeps) is made a machine without it here: this test is about assay's own choice."""
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.delenv("OPENBLAS_L2_SIZE", raising=False)
    needs_openblas()
    system = this_cpu()
    reports = _run(assay_home, tmp_path, {"ASSAY_SIMULATE_OPENBLAS_CORE": "Prescott"}, hpl=True)
    rates = _rates(reports["json"])
    for metric in ("compute.dgemm", "compute.hpl"):
        p = rates[metric]["params"]
        assert p["blas_core_detected"] == "Prescott", p
        assert p["blas_kernel_choice"] == "assay"
        assert p["blas_core"] == p["blas_core_asked"], p  # the probe read it back at run time
        assert below_isa(p["blas_core"], system.isa) is None
        assert "passed with OpenBLAS" in p["blas_kernel_verified"]
        assert p["blas_fallback_simulated"] == "ASSAY_SIMULATE_OPENBLAS_CORE=Prescott"
    core = rates["compute.dgemm"]["params"]["blas_core"]
    for fmt, text in reports.items():
        flat = " ".join(text.split())
        assert f"{core} kernels" in flat, fmt
        assert FALLBACK not in flat, fmt
    assert "HPL Rmax (OpenMPI" in reports["md"]


@pytest.mark.slow
def test_the_users_fallback_core_is_kept_and_flagged_in_every_format(
    assay_home: Path, tmp_path: Path
):
    needs_openblas()
    this_cpu()
    reports = _run(assay_home, tmp_path, {"OPENBLAS_CORETYPE": "Prescott"})
    p = _rates(reports["json"])["compute.dgemm"]["params"]
    assert p["blas_core"] == "Prescott" and p["blas_kernel_choice"] == "user"
    for fmt, text in reports.items():
        flat = " ".join(text.split())
        assert FALLBACK in flat, fmt
        assert "Prescott kernels" in flat, fmt
    doc = json.loads(reports["json"])
    [why] = [w for w in doc["why_low"] if w["metric"] == "compute.dgemm"]
    assert why["causes"][0].startswith(FALLBACK)
    assert "(BLAS fallback kernel)" in reports["md"]  # never a plain low % of Rpeak
