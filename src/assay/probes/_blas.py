"""The BLAS kernels a job runs: chosen at plan time, recorded with every rate, checked by the
run (DGEMM, SGEMM, HPL, HPCC share this).

Not a probe (the registry skips ``_`` modules). The decision is the plan's, from the facts
``assay.system.blas`` read (``PlanFacts.openblas``):

- the user set ``OPENBLAS_CORETYPE``: nothing is changed, and the params say it was the user's
  choice (MKL's and BLIS's own variables are recorded; they do not bind OpenBLAS);
- OpenBLAS's own pick is below what the CPU's flags allow and a better core passed its check:
  the job gets ``OPENBLAS_CORETYPE=<that core>``, and the params say what OpenBLAS picked,
  what was set and why; the job's own result check (DGEMM's exact check, HPL's residual)
  then proves the run, and the probe reports the core that really ran (``blas_core``);
- no better core passed: the job runs OpenBLAS's pick, and the params say which cores failed
  and how; the report flags the figure "BLAS fallback kernel: not the CPU's peak".

With ``ASSAY_SIMULATE_OPENBLAS_CORE`` set (``assay.system.blas``), the simulated pick is what
a job without a better core runs, and every sample says it was simulated.
"""

from __future__ import annotations

from typing import Any

from assay.probes.base import PlanContext
from assay.system.blas import SIMULATE_VAR

# Params every BLAS figure may carry (the report reads them; none is part of its identity).
CHOICE = "blas_kernel_choice"  # "user", "assay", "OpenBLAS"
REASON = "blas_kernel_reason"
DETECTED = "blas_core_detected"
ASKED = "blas_core_asked"
SIMULATED = "blas_fallback_simulated"
VERIFIED = "blas_kernel_verified"
MISMATCH = "blas_kernel_mismatch"


def _tried(tried: dict[str, str]) -> str:
    return "; ".join(f"{core}: {outcome}" for core, outcome in tried.items())


def kernel_plan(ctx: PlanContext) -> tuple[dict[str, str], dict[str, Any]]:
    """(environment to add to the job, params to record) for a job that loads OpenBLAS."""
    facts = ctx.facts.openblas(ctx.system)
    if facts is None or not facts.detected:
        note = facts.note if facts else "no OpenBLAS found to ask"
        return {}, {REASON: f"OpenBLAS's kernels not read at plan time: {note}"}
    params: dict[str, Any] = {DETECTED: facts.detected}
    env: dict[str, str] = {}
    simulated = f"{SIMULATE_VAR}={facts.simulated}" if facts.simulated else ""
    if simulated:
        params[SIMULATED] = simulated
    picked = f"OpenBLAS picked {facts.detected}" + (f" (simulated: {simulated})" * bool(simulated))
    if "OPENBLAS_CORETYPE" in facts.user:  # MKL's or BLIS's own variables do not bind OpenBLAS
        given = ", ".join(f"{k}={v}" for k, v in facts.user.items())
        params[CHOICE] = "user"
        params[REASON] = f"set by the user ({given}): never overridden; {picked} by itself"
        return env, params
    if core := facts.verified:
        env["OPENBLAS_CORETYPE"] = core
        params |= {CHOICE: "assay", ASKED: core}
        params[REASON] = (
            f"{facts.advice}: assay set OPENBLAS_CORETYPE={core}, which computed right in a "
            f"quick check ({_tried(facts.tried)})"
        )
        return env, params
    if facts.simulated:
        env["OPENBLAS_CORETYPE"] = facts.simulated  # the simulated fallback is what runs
    params[CHOICE] = "OpenBLAS"
    why = facts.advice or picked
    if facts.tried:
        why += f"; no better core computed right ({_tried(facts.tried)})"
    params[REASON] = why
    return env, params


def verify(params: dict[str, Any], proof: str) -> None:
    """Record what proved the run's kernels right (``proof``: the probe's own check, which the
    sample would not exist without) and whether OpenBLAS ran the core assay asked for."""
    core = params.get("blas_core")
    if core:
        params[VERIFIED] = f"{proof} with {params.get('blas_lib', 'the BLAS')} {core} kernels"
    asked = params.get(ASKED)
    if asked and core and str(core).lower() != str(asked).lower():
        params[MISMATCH] = f"assay set OPENBLAS_CORETYPE={asked}; OpenBLAS ran {core}"
