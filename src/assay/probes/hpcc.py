"""HPCC as such: Debian's ``hpcc``, every one of its tests, run only when asked for by name.

HPCC runs HPL and, sized from HPL's N, PTRANS, FFT, RandomAccess, STREAM, DGEMM and
ping-pong; measured on a 2-core node the whole run took 2–3× its HPL part, so it is not the
way to get Rmax within a budget (the ``hpl`` probe is). All its results are stored; a failed
HPL check is a failed job, and a failed check of another section is left out by the parser
with its reason (never a zero). The input is generated as for ``hpl`` (hpccinf.txt).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from assay.errors import SuiteError
from assay.model import Job, MpiInfo, Sample
from assay.parsers import hpcc as hpcc_parser
from assay.probes._blas import ASKED, CHOICE, DETECTED, REASON, SIMULATED, kernel_plan
from assay.probes._hplplan import HplSizeParams, checked_hpl, plan_size, rpeak_sample
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams
from assay.probes.hplsize import hpl_dat
from assay.system.peak import rpeak_flag

# HPCC runs PTRANS, FFT, RandomAccess, STREAM and DGEMM after HPL, sized from HPL's N;
# measured here: the whole hpcc run took 2–3× its HPL part on a quiet node, more on a loaded
# one (RandomAccess's table is sized from memory, not from the budget). The job timeout allows
# 4× the HPL budget or estimate, whichever is longer, plus 10 minutes.
HPCC_TIME_FACTOR, HPCC_TIMEOUT_BASE = 4.0, 600.0
# Debian's hpcc is linked against OpenMPI's libmpi.so.40; another launcher cannot start it.
HPCC_MPI = "openmpi"
PLAN_KEYS = ("engine", "mpi", "ranks", "rpeak_derivation", "time_budget")
# hpcc cannot say which kernels its OpenBLAS ran: its figures carry the plan's decision (the
# core OpenBLAS picks by itself, or the one assay set), not a run-time reading.
KERNEL_KEYS = (CHOICE, REASON, DETECTED, ASKED, SIMULATED)


class HpccParams(HplSizeParams):
    time_budget: float = Field(default=300.0, gt=0, description="seconds for its HPL part")


class HpccProbe(Probe):
    name = "hpcc"
    summary = "HPCC (Debian's hpcc): HPL, PTRANS, FFT, RandomAccess, STREAM, DGEMM in one run"
    Params = HpccParams
    uses_mpi = True
    default_timeout = 3600.0

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, HpccParams)
        mpi = next((m for m in ctx.mpis if m.name == HPCC_MPI), None)
        if mpi is None:
            found = ", ".join(m.name for m in ctx.mpis) or "none"
            raise SuiteError(
                f"hpcc: MPI {HPCC_MPI!r} not found (found: {found})",
                hint="Debian's hpcc needs OpenMPI: apt-get install openmpi-bin",
            )
        n_ranks = params.ranks or ranks or ctx.system.cores or 1
        grid = (params.p, params.q) if params.p and params.q else None
        size, peak, derivation, _ = plan_size(
            ctx, n_ranks, rate=params.rate, time_budget=params.time_budget,
            fraction=params.memory_fraction, nb=params.nb, n=params.n, grid=grid,
        )  # fmt: skip
        job_params: dict[str, Any] = {
            "engine": "hpcc", "mpi": mpi.name, "ranks": n_ranks, "input": "generated",
            "rpeak_derivation": derivation, **size.as_params(),
        }  # fmt: skip
        if peak:
            job_params["rpeak"] = peak
        if params.n is None:  # the budget the generated N was sized for (the report shows it)
            job_params["time_budget"] = params.time_budget
        skip = None if ctx.facts.which("hpcc") else "hpcc not found: apt-get install hpcc"
        kernel_env, kernel_params = kernel_plan(ctx)  # Debian's hpcc links the same OpenBLAS
        job_params |= kernel_params
        return [
            JobDraft(
                argv=["hpcc"],
                params=job_params,
                env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"} | kernel_env,
                spawn="mpi",
                mpi=mpi.name,
                ranks=n_ranks,
                inputs={"hpccinf.txt": hpl_dat(size, hpcc=True)},
                output_file="hpccoutf.txt",
                timeout=HPCC_TIMEOUT_BASE
                + HPCC_TIME_FACTOR * max(size.est_seconds, params.time_budget),
                label=f"hpcc N{size.n} {mpi.label}",
                skip_reason=skip,
            )
        ]

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        result = hpcc_parser.parse(stdout, source=job.job_id)
        failed = [f for f in result.meta.get("failed", []) if f.get("section", "HPL") == "HPL"]
        checked_hpl(result, failed, tool="HPCC")
        plan = {k: job.params[k] for k in PLAN_KEYS + KERNEL_KEYS if k in job.params}
        rpeak = job.params.get("rpeak")
        derivation = str(job.params.get("rpeak_derivation", ""))
        samples = []
        for s in result.samples:
            s.probe = self.name
            s.params = {**plan, **s.params}
            if s.metric in ("compute.hpl", "compute.dgemm") and isinstance(rpeak, float):
                # HPCC's DGEMM is per process (StarDGEMM): compare it with one core's peak.
                peak = rpeak if s.metric == "compute.hpl" else rpeak / int(job.params["ranks"])
                s.params["rpeak"] = peak
                s.params["efficiency"] = s.value / peak
                if flag := rpeak_flag(s.value, peak, derivation):
                    s.params["rpeak_flag"] = flag
            samples.append(s)
        if isinstance(rpeak, float):
            samples.append(rpeak_sample(self.name, rpeak, derivation, plan))
        return samples
