"""How often the all-pairs outlier rule names a healthy link, and how often it finds a slow one.

Simulated, with assay's own ``assay.analysis.statistics.outliers.outliers`` (nothing measured here:
the noise models are taken from measurements, see docs/cluster.md). For each cluster size N the
N(N-1)/2 links are drawn healthy, ``value = 1 * exp(sigma * normal)`` (a fabric whose links
repeat within sigma), and the rule is applied with and without the factor floor:

- false alarm: the share of all-healthy matrices in which any link is named;
- detection: one link set to ``fault`` x the healthy value (0.5: a lane down, a lower speed
  negotiated; 0.75: subtler, 1.33x worse), the share of matrices in which that link is named.

And the test VM's bimodal links (each job fast, or slow at 0.45x with probability 0.55, as
measured): a link is the median of ``--repeat`` draws.

    python bench/outlier_rule.py [--trials 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics

from assay.analysis.statistics.outliers import LINK_MIN_FACTOR, outliers


def links_of(n: int) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(n), 2))


def healthy(pairs: list[tuple[int, int]], sigma: float, rng: random.Random) -> dict:
    return {p: rng.lognormvariate(0.0, sigma) for p in pairs}


def bimodal(pairs: list[tuple[int, int]], repeat: int, rng: random.Random) -> dict:
    """The test VM: each job in the fast mode (1.0) or the slow one (0.45), 55 % slow."""

    def job() -> float:
        return (0.45 if rng.random() < 0.55 else 1.0) * rng.lognormvariate(0.0, 0.02)

    return {p: statistics.median(job() for _ in range(repeat)) for p in pairs}


def rate(trials: int, draw, factor: float) -> float:
    """Share of trials naming the slow link ``draw`` returns, or, when it returns none, any."""
    hits = 0
    for _ in range(trials):
        values, slow = draw()
        named = {o.key for o in outliers(values, "higher", min_factor=factor)}
        hits += bool(named) if slow is None else (slow in named)
    return hits / trials


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args, _ = ap.parse_known_args()  # run_all.py passes its own argv
    rng = random.Random(args.seed)
    floors = (1.0, LINK_MIN_FACTOR)
    print(f"{args.trials} trials each; factor 1.0 = the z-score alone, {LINK_MIN_FACTOR} = assay's")
    print("\n| N | links | sigma | false alarm, z | false alarm, z+f | found 0.5x | found 0.75x |")
    print("|---|---|---|---|---|---|---|")
    for n in (4, 8, 16):
        pairs = links_of(n)
        for sigma in (0.01, 0.05, 0.15):

            def clean(pairs=pairs, sigma=sigma):
                return healthy(pairs, sigma, rng), None

            def faulty(fault, pairs=pairs, sigma=sigma):
                values = healthy(pairs, sigma, rng)
                values[pairs[0]] *= fault
                return values, pairs[0]

            fa = [rate(args.trials, clean, f) for f in floors]
            found = [
                rate(args.trials, lambda fault=fault: faulty(fault), LINK_MIN_FACTOR)
                for fault in (0.5, 0.75)
            ]
            print(
                f"| {n} | {len(pairs)} | {sigma:.0%} | {fa[0]:.1%} | {fa[1]:.1%} | "
                f"{found[0]:.1%} | {found[1]:.1%} |"
            )
    print("\nThe test VM's bimodal links, 4 nodes, a link the median of --repeat jobs:")
    print("\n| repeat | link_factor | false alarm |")
    print("|---|---|---|")
    pairs = links_of(4)
    for repeat in (1, 3):
        for factor in (LINK_MIN_FACTOR, 4.0, 10.0):
            fa = rate(
                args.trials, lambda repeat=repeat: (bimodal(pairs, repeat, rng), None), factor
            )
            print(f"| {repeat} | {factor:g} | {fa:.1%} |")


if __name__ == "__main__":
    main()
