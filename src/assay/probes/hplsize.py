"""Choosing HPL's input so that nobody writes HPL.dat by hand.

- N from a memory fraction: the matrix takes 8·N² bytes; the HPL FAQ advises about 80% of
  the memory (https://www.netlib.org/benchmark/hpl/faqs.html, "What problem size N should I
  run?"), leaving room for the OS and MPI.
- Capped by a time budget: HPL counts 2/3·N³ + 3/2·N² floating-point operations
  (HPL_pdtest.c), so at a rate R the run takes about (2/3·N³)/R seconds; N is lowered until
  that fits the budget. The rate
  assumed is stated with the result (half of Rpeak when Rpeak is known — HPL on a tuned BLAS
  reaches 60–90% — else a deliberately low per-core figure, which errs on a smaller N).
- N is a multiple of NB (the FAQ: so that no process holds a partial block).
- The P×Q grid is as square as the rank count allows, with P ≤ Q (the FAQ: "P ≤ Q, close to
  square").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from assay.errors import SuiteError

DEFAULT_FRACTION = 0.80
DEFAULT_NB = 192  # a common choice for OpenBLAS/AVX2 and AVX-512 DGEMM kernels (HPL FAQ: 32–256)
FALLBACK_RATE_PER_CORE = 5e9  # flop/s: deliberately low when Rpeak is unknown
MIN_N = 1000


def hpl_flops(n: int) -> float:
    """HPL's own operation count for an order-n solve, as HPL_pdtest.c computes its Gflops:
    2/3·n³ (the LU factorisation) + 3/2·n² (the triangular solves, as HPL counts them)."""
    return 2.0 / 3.0 * n**3 + 1.5 * n**2


def process_grid(ranks: int) -> tuple[int, int]:
    p = max(d for d in range(1, math.isqrt(ranks) + 1) if ranks % d == 0)
    return p, ranks // p


@dataclass(frozen=True)
class HplSize:
    n: int
    nb: int
    p: int
    q: int
    matrix_bytes: int
    est_seconds: float
    rate_assumed: float  # flop/s
    rule: str  # how N was chosen, for the report

    def as_params(self) -> dict[str, object]:
        return {
            "N": self.n, "NB": self.nb, "P": self.p, "Q": self.q,
            "matrix_bytes": self.matrix_bytes, "est_seconds": round(self.est_seconds, 1),
            "rate_assumed": self.rate_assumed, "sizing": self.rule,
        }  # fmt: skip


def size_hpl(
    memory_bytes: int,
    ranks: int,
    *,
    rate: float,
    time_budget: float | None,
    fraction: float = DEFAULT_FRACTION,
    nb: int = DEFAULT_NB,
    n: int | None = None,
    grid: tuple[int, int] | None = None,
) -> HplSize:
    """HPL's N, NB, P, Q for ``ranks`` processes sharing ``memory_bytes``.

    A given ``n`` is checked, not changed: one that would not fit the memory or the time
    budget is refused with the sizes computed, before anything starts.
    """
    p, q = grid or process_grid(ranks)
    if p * q != ranks:
        raise SuiteError(f"HPL grid {p}×{q} does not use the {ranks} ranks")
    n_mem = math.isqrt(int(fraction * memory_bytes / 8))
    n_time = int((1.5 * time_budget * rate) ** (1 / 3)) if time_budget else None
    if n is not None:
        if 8 * n * n > memory_bytes * 0.95:
            raise SuiteError(
                f"HPL N={n} needs {8 * n * n / 2**30:.1f} GiB for the matrix alone; "
                f"this node has {memory_bytes / 2**30:.1f} GiB (N ≤ {n_mem} at {fraction:.0%})"
            )
        est = hpl_flops(n) / rate
        if time_budget and est > time_budget:
            raise SuiteError(
                f"HPL N={n} would take about {est:.0f} s at {rate / 1e9:.0f} GFLOP/s, over the "
                f"{time_budget:.0f} s budget (N ≤ {n_time} fits it)",
                hint="raise time_budget, or lower n",
            )
        rule = f"N={n} as given"
    else:
        n = n_mem if n_time is None else min(n_mem, n_time)
        n = n // nb * nb
        rule = (
            f"N from {fraction:.0%} of {memory_bytes / 2**30:.1f} GiB (≤ {n_mem})"
            + (f", capped by the {time_budget:.0f} s budget (≤ {n_time})" if n_time else "")
            + f", rounded down to a multiple of NB={nb}"
        )
        if n < MIN_N:
            raise SuiteError(
                f"HPL N would be {n} ({rule}): too small to measure anything",
                hint="raise time_budget or memory_fraction",
            )
    return HplSize(n, nb, p, q, 8 * n * n, hpl_flops(n) / rate, rate, rule)


HPL_DAT_TAIL = """\
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
"""

HPCC_TAIL = """\
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""


def hpl_dat(size: HplSize, *, device_out: int = 6, hpcc: bool = False) -> str:
    """HPL.dat (or hpccinf.txt when ``hpcc``): one N, one NB, one grid; HPL's default tuning
    lines as shipped in HPL's own example HPL.dat."""
    head = (
        "HPLinpack benchmark input file\n"
        "Generated by assay: " + size.rule + "\n"
        "HPL.out      output file name (if any)\n"
        f"{device_out:<13}device out (6=stdout,7=stderr,file)\n"
        "1            # of problems sizes (N)\n"
        f"{size.n:<13}Ns\n"
        "1            # of NBs\n"
        f"{size.nb:<13}NBs\n"
        "0            PMAP process mapping (0=Row-,1=Column-major)\n"
        "1            # of process grids (P x Q)\n"
        f"{size.p:<13}Ps\n"
        f"{size.q:<13}Qs\n"
    )
    return head + HPL_DAT_TAIL + (HPCC_TAIL if hpcc else "")
