"""What the HPL-class probes (``hpl``: our ScaLAPACK LU or a user's xhpl; ``hpcc``) share when
planning: the sizing params, the node's Rpeak, the rate a time budget is sized with, the
generated size, and the checks of a parsed HPL result.

Not a probe (the registry skips ``_`` modules): one named home for the shared planning, so
that neither probe imports the other.
"""

from __future__ import annotations

import math

from pydantic import Field

from assay.errors import ProbeError, SuiteError
from assay.model import Sample
from assay.parsers.base import ParseResult
from assay.probes.base import PlanContext, ProbeParams
from assay.probes.hplsize import (
    DEFAULT_FRACTION,
    DEFAULT_NB,
    FALLBACK_RATE_PER_CORE,
    HplSize,
    size_hpl,
)

# The share of Rpeak a time budget is sized with: HPL on a tuned BLAS reaches 60–90% of Rpeak
# on a quiet node, so assuming half errs on a smaller N (a run shorter than its budget).
BUDGET_RPEAK_SHARE = 0.5


class HplSizeParams(ProbeParams):
    """How an HPL-class run is sized: N from the memory share and time budget unless given,
    the block size, the process grid, the ranks and the rate the budget assumes."""

    memory_fraction: float = Field(default=DEFAULT_FRACTION, gt=0, le=0.95)
    time_budget: float = Field(default=300.0, gt=0, description="seconds for the solve itself")
    n: int | None = Field(default=None, ge=100)
    nb: int = Field(default=DEFAULT_NB, ge=1)
    p: int | None = Field(default=None, ge=1)
    q: int | None = Field(default=None, ge=1)
    ranks: int | None = Field(
        default=None, ge=1, description="default: one process, every core a BLAS thread"
    )
    rate: float | None = Field(default=None, gt=0, description="flop/s assumed for the budget")


def node_peak(ctx: PlanContext) -> tuple[float | None, int | None, str]:
    """(DP Rpeak of one node, its cores, the derivation or why there is none)."""
    from assay.system.peak import rpeak

    try:
        peak = rpeak(ctx.system)
    except Exception as exc:  # a malformed [peak] config must not stop HPL from running
        return None, None, f"Rpeak unknown: {exc}"
    if not peak.dp_flops:
        return None, peak.cores, peak.reason
    return peak.dp_flops, peak.cores, peak.derivation


def nodes_for(ranks: int, cores: int | None) -> int:
    """Nodes a run of ``ranks`` spans at one rank per core (several nodes: set ranks)."""
    return max(1, math.ceil(ranks / cores)) if cores else 1


def plan_size(
    ctx: PlanContext,
    ranks: int,
    *,
    rate: float | None,
    time_budget: float,
    fraction: float,
    nb: int,
    n: int | None,
    grid: tuple[int, int] | None,
    threads: int = 1,
) -> tuple[HplSize, float | None, str, int]:
    """The generated size for ``ranks`` ranks of ``threads`` BLAS threads each, with (Rpeak
    of the cores used, derivation, nodes). Memory and Rpeak scale with the nodes the cores
    span; the rate the budget assumes is ``rate`` when given, else half the Rpeak of the cores
    used, else a low per-core figure.
    """
    memory = ctx.system.memory_bytes
    if not memory:
        raise SuiteError("hpl: the node's memory size is unknown; set params.n")
    peak, cores, derivation = node_peak(ctx)
    cores = cores or ctx.system.cores
    used = ranks * threads
    nodes = nodes_for(used, cores)
    used_peak = peak * min(used, cores * nodes) / cores if peak and cores else None
    assumed = rate or (
        BUDGET_RPEAK_SHARE * used_peak if used_peak else FALLBACK_RATE_PER_CORE * used
    )
    size = size_hpl(
        memory * nodes, ranks, rate=assumed, time_budget=time_budget,
        fraction=fraction, nb=nb, n=n, grid=grid,
    )  # fmt: skip
    return size, used_peak, derivation, nodes


def rpeak_sample(probe: str, rpeak: float, derivation: str, plan: dict[str, object]) -> Sample:
    """compute.rpeak as dgemm records it (precision "d"), so the report shows one Rpeak row."""
    params = {**plan, "precision": "d", "derivation": derivation}
    return Sample.make(probe, "compute.rpeak", rpeak, params)


def checked_hpl(result: ParseResult, failed: list[dict], *, tool: str) -> list[Sample]:
    """The parsed HPL samples of ``tool`` (xhpl or HPCC), or why there are none: a failed residual
    check (HPL's own verdict that the solution is wrong, so no rate counts), a cut-off output,
    or no HPL line at all."""
    if failed:
        f = failed[0]
        raise ProbeError(
            f"HPL residual check FAILED (N={f.get('N')}, NB={f.get('NB')}, "
            f"P={f.get('P')}, Q={f.get('Q')}, scaled residual {f.get('residual')}): "
            "no rate is reported"
        )
    if not result.complete:
        raise ProbeError(f"{tool} output is incomplete; missing: {', '.join(result.missing)}")
    if not any(s.metric == "compute.hpl" for s in result.samples):
        raise ProbeError(f"{tool} printed no HPL result")
    return list(result.samples)
