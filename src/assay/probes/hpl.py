"""HPL Rmax: HPL's LU solve alone — our ScaLAPACK probe, or an ``xhpl`` the user points to.

Engines:

- ``lu`` (the default): ``native/hpl_lu.c`` with HPL's residual check and FLOP count, built
  with each MPI found (OpenMPI with ``-lscalapack-openmpi``, MPICH with ``-lscalapack-mpich``:
  Debian's ``libscalapack-*-dev``), one job per MPI. On one node (the default): one process,
  every core a BLAS thread, LAPACK's ``dgetrf``/``dgetrs`` on the whole matrix, as Intel's
  shared-memory LINPACK benchmark; with ``ranks`` given (several nodes): one rank per core,
  ScaLAPACK ``pdgetrf``/``pdgetrs`` over a P×Q BLACS grid. On this project's 2-core VM the
  first read 1.07 of the HPL inside hpcc, the second 0.81 (``docs/benchmarks.md``);
- ``xhpl``: the user's HPL binary (``params.xhpl``), with a generated HPL.dat or the user's own
  (``params.hpl_dat``), on the one MPI it was built with (``params.mpi``).

Debian's ``hpcc`` runs RandomAccess, FFT, PTRANS, STREAM and DGEMM around its HPL, which
made a time budget bound nothing: it is the separate probe ``hpcc``, run only when asked for.

The input is generated (``assay.probes.hplsize``): N from a memory fraction capped by a time
budget (``time_budget`` seconds for the solve itself, at half the Rpeak of the cores used),
N a multiple of NB, a near-square P×Q grid. The LU probe then runs a pilot solve of order N/4
and lowers N when the pilot's rate says the budget would not hold on the node as loaded now
(``n_planned``, ``pilot_n``, ``pilot_rate`` in the sample); the samples carry the N, NB,
P×Q, the time the solve took and how N was chosen. Several nodes: set the bench's ``ranks``
(nodes × cores per node): memory and Rpeak scale with the nodes the ranks span. A run whose
residual check FAILED is a failed job, never a rate; a rate above Rpeak carries
``rpeak_flag``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from assay.errors import ProbeError, SuiteError
from assay.model import Build, Job, MpiInfo, Sample
from assay.parsers import hpl as hpl_parser
from assay.probes._hplplan import HplSizeParams, checked_hpl, node_peak, plan_size, rpeak_sample
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl
from assay.probes.hplsize import hpl_dat
from assay.system.peak import rpeak_flag

# Debian's ScaLAPACK, one build per MPI flavour (dpkg -L libscalapack-openmpi-dev ...).
SCALAPACK_LIBS: dict[str, tuple[str, ...]] = {
    "openmpi": ("-lscalapack-openmpi",),
    "mpich": ("-lscalapack-mpich",),
}
# One rank per core: the BLAS under ScaLAPACK must not start threads of its own; one process
# on a node: the BLAS gets every core.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def blas_env(threads: int) -> dict[str, str]:
    return dict.fromkeys(THREAD_VARS, str(threads))


# The job's timeout: this much over the budget or the estimated solve time, whichever is
# longer (generation and the residual check are O(N²)), plus an allowance for start-up.
TIMEOUT_FACTOR, TIMEOUT_BASE = 3.0, 120.0
PLAN_KEYS = ("engine", "mpi", "ranks", "sized_for_nodes", "rpeak_derivation", "time_budget")


class HplParams(HplSizeParams):
    engine: Literal["auto", "lu", "xhpl"] = "auto"
    xhpl: str | None = Field(default=None, description="path of an xhpl binary")
    hpl_dat: str | None = Field(default=None, description="a user's HPL.dat (xhpl), as it is")
    mpi: str | None = Field(default=None, description="xhpl: the MPI it was built with")
    scalapack_libs: list[str] | None = Field(
        default=None, description='lu with another MPI: link flags, e.g. ["-lscalapack"]'
    )
    corrupt_for_test: bool = Field(
        default=False, description="lu: spoil the solution on purpose: proves the check fails"
    )


def _engine(params: HplParams) -> str:
    engine = params.engine if params.engine != "auto" else ("xhpl" if params.xhpl else "lu")
    if engine == "xhpl" and not params.xhpl:
        raise SuiteError("hpl: engine xhpl needs params.xhpl, the path of the binary")
    if engine == "lu":
        given = [k for k in ("xhpl", "hpl_dat", "mpi") if getattr(params, k)]
        if given:
            raise SuiteError(
                f"hpl: {', '.join(given)} apply to engine xhpl only",
                hint="for the ScaLAPACK LU set n/nb/p/q, and the bench's mpi key",
            )
    elif params.corrupt_for_test or params.scalapack_libs:
        raise SuiteError("hpl: corrupt_for_test and scalapack_libs apply to engine lu only")
    return engine


class HplProbe(Probe):
    name = "hpl"
    summary = "HPL Rmax: the LU solve alone (ScaLAPACK, per MPI) or a user's xhpl; % of Rpeak"
    Params = HplParams
    uses_mpi = True
    default_timeout = 3600.0

    def expected_seconds(self, job: Job) -> float | None:
        # the solve's estimate at the assumed rate (generation and the check are O(N²) more)
        est = job.params.get("est_seconds")
        return float(est) if est else None

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, HplParams)
        engine = _engine(params)
        grid = (params.p, params.q) if params.p and params.q else None
        given = params.ranks or ranks or (params.p * params.q if grid else None)
        # Not told how many ranks: one process, every core of the node a BLAS thread.
        n_ranks = given or 1
        threads = 1 if given or engine == "xhpl" else (ctx.system.cores or 1)
        if engine == "xhpl" and not given:
            n_ranks = ctx.system.cores or 1  # the user's xhpl: one rank per core, as HPL runs
        if engine == "xhpl" and params.hpl_dat:
            return [self._xhpl_user_dat(params, ctx, mpis, n_ranks)]
        size, peak, derivation, nodes = plan_size(
            ctx, n_ranks, rate=params.rate, time_budget=params.time_budget,
            fraction=params.memory_fraction, nb=params.nb, n=params.n, grid=grid,
            threads=threads,
        )  # fmt: skip
        job_params: dict[str, Any] = {
            "engine": engine, "ranks": n_ranks, "threads": threads, "sized_for_nodes": nodes,
            "input": "generated", "rpeak_derivation": derivation, **size.as_params(),
        }  # fmt: skip
        if peak:
            job_params["rpeak"] = peak
        if params.n is None:  # the budget the generated N was sized for (the report shows it)
            job_params["time_budget"] = params.time_budget
        # The pilot keeps a generated N's solve within the budget; a given N runs as given at
        # whatever rate the node has now: the estimate (at the assumed rate) may be short.
        timeout = TIMEOUT_BASE + TIMEOUT_FACTOR * max(size.est_seconds, params.time_budget)
        if engine == "xhpl":
            mpi = _xhpl_mpi(params, ctx, mpis)
            return [
                _xhpl_draft(params, mpi, job_params, {"HPL.dat": hpl_dat(size)}, n_ranks, timeout)
            ]
        argv = ["{exe}", "--n", str(size.n), "--nb", str(size.nb)]
        argv += ["--p", str(size.p), "--q", str(size.q)]
        if params.n is None:  # a given N runs as given; a generated one may shrink to the budget
            argv += ["--budget", repr(params.time_budget)]
        if params.corrupt_for_test:
            argv.append("--corrupt-for-test")
        drafts = []
        for mpi in mpis:
            libs = tuple(params.scalapack_libs or SCALAPACK_LIBS.get(mpi.flavor, ()))
            skip = None
            if not libs:
                skip = (
                    f"no ScaLAPACK known for MPI {mpi.name} ({mpi.flavor}): set "
                    'params.scalapack_libs, e.g. ["-lscalapack"]'
                )
            drafts.append(
                JobDraft(
                    argv=argv,
                    params={**job_params, "mpi": mpi.name, "mpi_label": mpi.label},
                    env=blas_env(threads),
                    launcher="mpi",
                    mpi=mpi.name,
                    ranks=n_ranks,
                    threads=threads,
                    build=Build("hpl_lu.c", mpi.name, ("-O2",), (*libs, "-llapack", "-lm")),
                    timeout=timeout,
                    label=f"lu N{size.n} {size.p}x{size.q}"
                    + (f" {threads} threads" if threads > 1 else "")
                    + f" {mpi.label}",
                    skip_reason=skip,
                )
            )
        return drafts

    def _xhpl_user_dat(
        self, params: HplParams, ctx: PlanContext, mpis: list[MpiInfo], n_ranks: int
    ) -> JobDraft:
        assert params.hpl_dat
        path = Path(params.hpl_dat).expanduser()
        if not path.is_file():
            raise SuiteError(f"hpl: HPL.dat {path} not found")
        mpi = _xhpl_mpi(params, ctx, mpis)
        peak, cores, derivation = node_peak(ctx)
        job_params: dict[str, Any] = {
            "engine": "xhpl", "ranks": n_ranks,
            "input": f"user HPL.dat {path}", "rpeak_derivation": derivation,
        }  # fmt: skip
        if peak and cores:
            job_params["rpeak"] = peak * n_ranks / cores if n_ranks < cores else peak
        inputs = {"HPL.dat": path.read_text()}
        return _xhpl_draft(params, mpi, job_params, inputs, n_ranks, None)

    def parse(self, stdout: str, job: Job) -> list[Sample]:
        plan = {k: job.params[k] for k in PLAN_KEYS if k in job.params}
        if job.params.get("engine") == "xhpl":
            samples = _xhpl_samples(stdout, job)
        else:
            samples = _lu_samples(stdout, job)
        rpeak = job.params.get("rpeak")
        derivation = str(job.params.get("rpeak_derivation", ""))
        for s in samples:
            s.probe = self.name
            s.params = {**plan, **s.params}
            if s.metric == "compute.hpl" and isinstance(rpeak, float):
                s.params["rpeak"] = rpeak
                s.params["efficiency"] = s.value / rpeak
                flag = rpeak_flag(s.value, rpeak, derivation)
                if flag:
                    s.params["rpeak_flag"] = flag
        if isinstance(rpeak, float):
            samples.append(rpeak_sample(self.name, rpeak, derivation, plan))
        return samples


def _lu_samples(stdout: str, job: Job) -> list[Sample]:
    base = {k: v for k, v in job.params.items() if k not in ("rpeak", "est_seconds")}
    samples = parse_jsonl(stdout, "hpl", base)
    hpl = [s for s in samples if s.metric == "compute.hpl"]
    if len(hpl) != 1:
        raise ProbeError(f"hpl_lu printed {len(hpl)} compute.hpl lines, expected 1")
    p = hpl[0].params
    # The probe prints a rate only after the check passed; say so, and refuse anything else.
    if p.get("residual_passed") != 1 or not p.get("residual", 99.0) < p.get("threshold", 16.0):
        raise ProbeError(f"HPL residual check not passed: {p.get('residual')}: no rate")
    p["residual_passed"] = True
    planned = tuple(job.params.get(k) for k in ("NB", "P", "Q"))
    ran = tuple(p.get(k) for k in ("NB", "P", "Q"))
    n_plan = job.params.get("N")
    # The pilot may lower N to fit the budget (n_planned says from what), never raise it.
    if planned != ran or not isinstance(n_plan, int) or not p.get("N", 0) <= n_plan:
        raise ProbeError(
            f"hpl_lu ran N={p.get('N')}, NB, P, Q = {ran}; the plan said N={n_plan}, {planned}"
        )
    return samples


def _xhpl_samples(stdout: str, job: Job) -> list[Sample]:
    result = hpl_parser.parse(stdout, source=job.job_id)
    return checked_hpl(result, result.meta.get("failed", []), tool="HPL")


def _xhpl_mpi(params: HplParams, ctx: PlanContext, mpis: list[MpiInfo]) -> MpiInfo:
    """An xhpl is linked against one MPI: the one named, else the first selected."""
    if params.mpi:
        chosen = next((m for m in ctx.mpis if m.name == params.mpi), None)
        if chosen is None:
            found = ", ".join(m.name for m in ctx.mpis) or "none"
            raise SuiteError(f"hpl: MPI {params.mpi!r} not found (found: {found})")
        return chosen
    if not mpis:
        raise SuiteError("hpl: xhpl needs an MPI; none was found")
    return mpis[0]


def _xhpl_draft(
    params: HplParams,
    mpi: MpiInfo,
    job_params: dict[str, Any],
    inputs: dict[str, str],
    ranks: int,
    timeout: float | None,
) -> JobDraft:
    assert params.xhpl
    skip = None
    if not shutil.which(params.xhpl):
        skip = f"xhpl {params.xhpl} not found or not executable"
    return JobDraft(
        argv=[params.xhpl],
        params={**job_params, "mpi": mpi.name, "mpi_label": mpi.label},
        env=blas_env(1),
        launcher="mpi",
        mpi=mpi.name,
        ranks=ranks,
        inputs=inputs,
        timeout=timeout,
        label=f"xhpl {mpi.label}",
        skip_reason=skip,
    )
