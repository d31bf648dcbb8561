"""DGEMM and SGEMM through a CBLAS (OpenBLAS by default), checked, with % of Rpeak.

The native probe (``native/dgemm.c``) times C = A·B on n x n matrices, counts 2·n³ FLOPs a
multiply and reports the best rate; it checks C before reporting anything. This side picks
n, the BLAS and its threads, and records with each rate the node's Rpeak it is judged against
(``assay.system.peak``; ``rpeak*`` params), or ``rpeak_note`` saying why there is none. The
share of Rpeak is computed by the derive step (``assay.analysis.derived.derive``).

The BLAS that ran is read by the probe itself (``native/blasinfo.h``: library, version, the
kernels it chose); with OpenBLAS the plan may give it better kernels than its own pick
(``assay.probes._blas``), and the probe's exact check proves them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from assay.errors import SuiteError
from assay.model import Build, Job, MpiInfo, Sample
from assay.probes._blas import kernel_plan, verify
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl
from assay.system.peak import PeakResult, Precision, rpeak

# The auto order rule (dgemm_order).
TARGET_CALL_S = 0.5  # one DGEMM call should take about this long at the expected rate
# Without an Rpeak the expected rate is this much a core: a modest AVX2 core (16 FLOP/cycle at
# ~2 GHz). It sizes the matrices and nothing else; no Rpeak is ever derived from it.
SIZING_RATE_PER_CORE = 30e9
MEMORY_FRACTION = 0.1  # the three double matrices take at most this share of memory
MIN_ORDER, MAX_ORDER, ORDER_STEP = 1024, 40000, 64
MATRICES = 3
DOUBLE_BYTES = 8

DEFAULT_LIBS: dict[str, tuple[str, ...]] = {"openblas": ("-lopenblas",)}
# Every BLAS threads from one of these; setting them all is harmless.
THREAD_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
)
RPEAK_KEY = "rpeak"  # job param carrying the Rpeak from plan time to parse(); never in a sample
METRIC_PRECISION: dict[str, tuple[Precision, str]] = {
    "compute.dgemm": ("dp", "d"),
    "compute.sgemm": ("sp", "s"),
}


class DgemmParams(ProbeParams):
    n: int | None = Field(
        default=None, ge=16, le=100_000, description="matrix order; default: auto (dgemm_order)"
    )
    precision: Literal["d", "s", "both"] = "both"
    min_time: float = Field(default=1.0, gt=0, le=86400, description="timed seconds, at least")
    reps: int = Field(default=3, ge=1, description="timed multiplies, at least")
    warmup: int = Field(default=1, ge=0, description="untimed multiplies first")
    threads: int | Literal["all"] = "all"
    blas: str = Field(
        default="openblas",
        pattern=r"^[A-Za-z0-9_.+-]+$",
        description="the BLAS's name; 'openblas' also reports its build and core",
    )
    blas_libs: list[str] | None = Field(
        default=None, description='link flags, e.g. ["-lmkl_rt"]; default for openblas'
    )
    blas_include: str | None = Field(default=None, description="directory of its CBLAS header")
    blas_header: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_./+-]+\.h$", description="default cblas.h"
    )
    corrupt_for_test: bool = Field(
        default=False, description="make the result wrong on purpose: proves the check fails"
    )


def dgemm_order(expected_flops: float, memory_bytes: int | None) -> int:
    """The auto matrix order: one multiply should take about ``TARGET_CALL_S`` at the expected
    rate (the Rpeak of the cores used, else ``SIZING_RATE_PER_CORE`` a core), so
    2·n³ = 0.5 s × rate and n = cbrt(0.25 × rate); then at most 10% of memory for the three
    double matrices (3 × 8 × n² bytes), at least 1024, at most 40000, rounded down to a
    multiple of 64.
    """
    n = math.cbrt(TARGET_CALL_S * expected_flops / 2)
    if memory_bytes:
        n = min(n, math.sqrt(MEMORY_FRACTION * memory_bytes / (MATRICES * DOUBLE_BYTES)))
    n = min(max(n, MIN_ORDER), MAX_ORDER)
    return max(MIN_ORDER, int(n) // ORDER_STEP * ORDER_STEP)


def build_for(params: DgemmParams) -> Build:
    """Compile flags and link libraries for the chosen CBLAS."""
    libs = tuple(params.blas_libs) if params.blas_libs is not None else None
    if libs is None:
        libs = DEFAULT_LIBS.get(params.blas)
    if libs is None:
        raise SuiteError(
            f"dgemm: no link flags known for blas {params.blas!r}",
            hint='give them: params = { blas = "mkl", blas_libs = ["-lmkl_rt"] }',
        )
    flags = ["-O2", f"-DASSAY_BLAS={params.blas}"]
    if params.blas == "openblas":
        flags.append("-DASSAY_OPENBLAS")
    if params.blas_include:
        flags.append(f"-I{params.blas_include}")
    if params.blas_header:
        flags.append(f"-DASSAY_CBLAS_HEADER=<{params.blas_header}>")
    # -ldl: blasinfo.h's dlopen/dladdr (in libc itself from glibc 2.34, in libdl before)
    return Build("dgemm.c", "cc", tuple(flags), (*libs, "-lm", "-ldl"))


def rpeak_summary(peak: PeakResult) -> dict[str, Any]:
    """What parse() needs of the Rpeak, as plain JSON values (it only sees the Job)."""
    cores = peak.cores or 0
    return {
        "dp": peak.dp_flops,
        "sp": peak.sp_flops,
        "cores": peak.cores,
        "per_core_dp": peak.dp_flops / cores if peak.dp_flops and cores else None,
        "per_core_sp": peak.sp_flops / cores if peak.sp_flops and cores else None,
        "derivation_dp": peak.derivation,
        "derivation_sp": peak.derivation_sp,
        "clock_kind": peak.clock_kind,
        "uarch": peak.uarch,
        "reason": peak.reason,
    }


def rpeak_params(metric: str, info: dict[str, Any]) -> dict[str, Any]:
    """The plan-time Rpeak a rate is judged against, as the rate's params.

    parse() only records it; the share of Rpeak (and one Rpeak figure per precision) is
    computed by the derive step (``assay.analysis.derived.derive``), so reports and comparisons read
    the same numbers. Without a peak, ``rpeak_note`` says why.
    """
    precision, _ = METRIC_PRECISION[metric]
    node, per_core, cores = (
        info.get(precision),
        info.get(f"per_core_{precision}"),
        info.get("cores"),
    )
    if not node or not per_core or not cores:
        return {"rpeak_note": info.get("reason") or "no Rpeak known"}
    return {
        "rpeak": float(node),
        "rpeak_per_core": float(per_core),
        "rpeak_cores": int(cores),
        "rpeak_derivation": info.get(f"derivation_{precision}") or "",
        "rpeak_clock": info.get("clock_kind"),
        "rpeak_uarch": info.get("uarch"),
    }


class DgemmProbe(Probe):
    name = "dgemm"
    summary = "compute: CBLAS DGEMM/SGEMM (OpenBLAS by default), checked, with % of Rpeak"
    Params = DgemmParams
    default_timeout = 900.0
    stdout_only = True  # per node, one step runs it on every node

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, DgemmParams)
        system = ctx.system
        threads = system.cores or system.threads or 1
        if params.threads != "all":
            threads = params.threads
        peak = rpeak(system)
        per_core = peak.dp_flops / peak.cores if peak.dp_flops and peak.cores else None
        if params.n:
            n, rule = params.n, "given"
        else:
            rate = (per_core or SIZING_RATE_PER_CORE) * threads
            n = dgemm_order(rate, system.memory_bytes)
            at = (
                "Rpeak" if per_core else f"{SIZING_RATE_PER_CORE / 1e9:g} GFLOP/s a core (no Rpeak)"
            )
            rule = f"auto: ~{TARGET_CALL_S:g} s a DGEMM at {at}, at most 10% of memory"
        argv = [
            "{exe}",
            "--n", str(n),
            "--precision", params.precision,
            "--min-time", repr(params.min_time),
            "--reps", str(params.reps),
            "--warmup", str(params.warmup),
        ]  # fmt: skip
        if params.corrupt_for_test:
            argv.append("--corrupt-for-test")
        env = {var: str(threads) for var in THREAD_VARIABLES}
        # OpenMP builds of a BLAS bind by these; pthread builds ignore them.
        env |= {"OMP_PROC_BIND": "spread", "OMP_PLACES": "cores"}
        job_params: dict[str, Any] = {
            "n": n,
            "n_rule": rule,
            "threads": threads,
            "blas": params.blas,
            RPEAK_KEY: rpeak_summary(peak),
        }
        if params.blas == "openblas":  # OpenBLAS's kernels: its own pick, or a better one
            kernel_env, kernel_params = kernel_plan(ctx)
            env |= kernel_env
            job_params |= kernel_params
        return [
            JobDraft(
                argv=argv,
                params=job_params,
                env=env,
                build=build_for(params),
                label=f"{params.precision} n{n} {threads} threads",
            )
        ]

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        base = {k: v for k, v in job.params.items() if k != RPEAK_KEY}
        samples = parse_jsonl(stdout, self.name, base)
        info = job.params.get(RPEAK_KEY) or {}
        for sample in samples:
            if sample.metric in METRIC_PRECISION:
                sample.params.update(rpeak_params(sample.metric, info))
                # the probe prints a rate only after its exact check of C passed
                verify(sample.params, "the exact result check (C·x = A·(B·x)) passed")
        return samples
