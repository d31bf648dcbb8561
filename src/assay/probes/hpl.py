"""HPL Rmax: the real HPL — an ``xhpl`` the user points to, else Debian's ``hpcc``.

The input is generated (``assay.analysis.hplsize``): N from a memory fraction capped by a time
budget, NB, a near-square P×Q grid. A user's own HPL.dat is used as it is. A run whose
residual check FAILED is a failed job, never a rate. With ``hpcc``, HPCC's other results
(STREAM, DGEMM, PTRANS, RandomAccess, FFT, ping-pong) are stored too.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal

from pydantic import Field

from assay.analysis.hplsize import (
    DEFAULT_FRACTION,
    DEFAULT_NB,
    FALLBACK_RATE_PER_CORE,
    hpl_dat,
    size_hpl,
)
from assay.errors import ProbeError, SuiteError
from assay.model import Job, MpiInfo, Sample
from assay.parsers import hpcc as hpcc_parser
from assay.parsers import hpl as hpl_parser
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams

# HPCC runs PTRANS, FFT, RandomAccess, STREAM and DGEMM after HPL, sized from HPL's N;
# measured here: the whole hpcc run took 2–3× its HPL part. The job timeout allows for 4×.
HPCC_TIME_FACTOR = 4.0
# Debian's hpcc is linked against OpenMPI's libmpi.so.40; another launcher cannot start it.
HPCC_MPI = "openmpi"


class HplParams(ProbeParams):
    engine: Literal["auto", "hpcc", "xhpl"] = "auto"
    xhpl: str | None = Field(default=None, description="path of an xhpl binary")
    hpl_dat: str | None = Field(default=None, description="a user's HPL.dat, used as it is")
    memory_fraction: float = Field(default=DEFAULT_FRACTION, gt=0, le=0.95)
    time_budget: float = Field(default=300.0, gt=0, description="seconds for HPL itself")
    n: int | None = Field(default=None, ge=100)
    nb: int = Field(default=DEFAULT_NB, ge=1)
    p: int | None = Field(default=None, ge=1)
    q: int | None = Field(default=None, ge=1)
    ranks: int | None = Field(default=None, ge=1, description="default: one per core")
    rate: float | None = Field(default=None, gt=0, description="flop/s assumed for the budget")
    mpi: str | None = Field(default=None, description="default: openmpi for hpcc")


def _peak(ctx: PlanContext) -> tuple[float | None, str]:
    from assay.analysis.peak import rpeak

    try:
        peak = rpeak(ctx.system)
    except Exception as exc:  # a malformed [peak] config must not stop HPL from running
        return None, f"Rpeak unknown: {exc}"
    return peak.dp_flops, peak.derivation if peak.dp_flops else peak.reason


class HplProbe(Probe):
    name = "hpl"
    summary = "HPL Rmax with generated input (xhpl, else Debian's hpcc); Rmax/Rpeak efficiency"
    Params = HplParams
    uses_mpi = True
    default_timeout = 3600.0

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, HplParams)
        engine = params.engine
        if engine == "auto":
            engine = "xhpl" if params.xhpl else "hpcc"
        if engine == "xhpl" and not params.xhpl:
            raise SuiteError("hpl: engine xhpl needs params.xhpl, the path of the binary")
        want = params.mpi or (HPCC_MPI if engine == "hpcc" else None)
        chosen = next((m for m in ctx.mpis if m.name == want), None) if want else None
        if chosen is None and not want and mpis:
            chosen = mpis[0]
        if chosen is None:
            found = ", ".join(m.name for m in ctx.mpis) or "none"
            raise SuiteError(
                f"hpl: MPI {want!r} not found (found: {found})",
                hint="Debian's hpcc needs OpenMPI: apt-get install openmpi-bin",
            )
        n_ranks = params.ranks or ranks or ctx.system.cores or 1
        rpeak_dp, derivation = _peak(ctx)
        rate = params.rate or (0.5 * rpeak_dp if rpeak_dp else FALLBACK_RATE_PER_CORE * n_ranks)
        job_params: dict[str, object] = {"engine": engine, "mpi": chosen.name, "ranks": n_ranks}
        if rpeak_dp:
            job_params["rpeak"] = rpeak_dp
        job_params["rpeak_derivation"] = derivation
        if params.hpl_dat:
            path = Path(params.hpl_dat).expanduser()
            if not path.is_file():
                raise SuiteError(f"hpl: HPL.dat {path} not found")
            text = path.read_text()
            job_params["input"] = f"user HPL.dat {path}"
            timeout = None
        else:
            grid = (params.p, params.q) if params.p and params.q else None
            memory = ctx.system.memory_bytes
            if not memory:
                raise SuiteError("hpl: the node's memory size is unknown; set params.n")
            size = size_hpl(
                memory, n_ranks, rate=rate, time_budget=params.time_budget,
                fraction=params.memory_fraction, nb=params.nb, n=params.n, grid=grid,
            )  # fmt: skip
            text = hpl_dat(size, hpcc=engine == "hpcc")
            job_params |= size.as_params()
            job_params["input"] = "generated"
            factor = HPCC_TIME_FACTOR if engine == "hpcc" else 2.0
            timeout = 120.0 + factor * size.est_seconds
        skip = None
        if engine == "hpcc" and not shutil.which("hpcc"):
            skip = "hpcc not found: apt-get install hpcc (or point params.xhpl to an xhpl)"
        if engine == "xhpl" and not shutil.which(str(params.xhpl)):
            skip = f"xhpl {params.xhpl} not found or not executable"
        if engine == "hpcc":
            argv, inputs, output = ["hpcc"], {"hpccinf.txt": text}, "hpccoutf.txt"
        else:
            argv, inputs, output = [str(params.xhpl)], {"HPL.dat": text}, None
        env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}  # one rank per core
        return [
            JobDraft(
                argv=argv,
                params=job_params,
                env=env,
                launcher="mpi",
                mpi=chosen.name,
                ranks=n_ranks,
                inputs=inputs,
                output_file=output,
                timeout=timeout,
                label=f"{engine} {chosen.label}",
                skip_reason=skip,
            )
        ]

    def parse(self, stdout: str, job: Job) -> list[Sample]:
        hpcc = job.params.get("engine") == "hpcc"
        result = (hpcc_parser if hpcc else hpl_parser).parse(stdout, source=job.job_id)
        failed = [f for f in result.meta.get("failed", []) if f.get("section", "HPL") == "HPL"]
        if failed:
            f = failed[0]
            raise ProbeError(
                f"HPL residual check FAILED (N={f.get('N')}, NB={f.get('NB')}, "
                f"P={f.get('P')}, Q={f.get('Q')}, scaled residual {f.get('residual')}): "
                "no rate is reported"
            )
        if not result.complete:
            raise ProbeError(f"HPL output is incomplete; missing: {', '.join(result.missing)}")
        rpeak = job.params.get("rpeak")
        plan = {k: job.params[k] for k in ("engine", "mpi", "ranks", "rpeak_derivation")}
        samples = []
        for s in result.samples:
            s.probe = self.name
            s.params = {**plan, **s.params}
            if s.metric == "compute.hpl" and isinstance(rpeak, float):
                s.params["rpeak"] = rpeak
                s.params["efficiency"] = s.value / rpeak
            samples.append(s)
        if not any(s.metric == "compute.hpl" for s in samples):
            raise ProbeError("HPL printed no result line")
        if isinstance(rpeak, float):
            samples.append(
                Sample.make(self.name, "compute.rpeak", rpeak, {**plan, "precision": "dp"})
            )
        return samples
