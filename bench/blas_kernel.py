"""DGEMM and HPL % of Rpeak on a node whose OpenBLAS falls back, before and after assay picks
the kernel, against the right kernel set by hand and against hpcc on that same kernel (issue 19).

The fallback is OpenBLAS's Prescott (SSE3) kernels, what Debian's 0.3.21 runs on a CPU it does
not know. Four conditions, alternated in rounds so that drift in the machine's load hits all:

- **before**: ``OPENBLAS_CORETYPE=Prescott`` — the jobs run the fallback, as assay did before
  (today assay keeps a user's setting, so this is also what it runs when told to);
- **after**: ``ASSAY_SIMULATE_OPENBLAS_CORE=Prescott`` — OpenBLAS's own pick is Prescott and
  assay picks, checks and sets a better core;
- **by hand**: ``OPENBLAS_CORETYPE=<the core assay picked>`` — the right kernel, set by a user;
- **hpcc**: Debian's hpcc (which links the same OpenBLAS) with that same ``OPENBLAS_CORETYPE``:
  HPL inside HPCC at the same N/NB (one rank per core, its method), SingleDGEMM.

    python bench/blas_kernel.py [--n 2048] [--hpl-n 6000] [--nb 128] [--rounds 2]
    python bench/blas_kernel.py --dgemm-only --rounds 6   # after against by hand, ABBA order

``--dgemm-only`` runs DGEMM alone, "after" and "by hand" only, in ABBA order (after, by hand,
by hand, after, ...) so that a drift in the machine's load cancels out of the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics

from _common import assay, latest_samples, scratch_home, write_suite

CORES = os.cpu_count() or 1


def suite(args: argparse.Namespace, hpcc: bool) -> str:
    text = (
        'name = "bench-blas"\n[[bench]]\nprobe = "dgemm"\n'
        f'params = {{ n = {args.n}, precision = "d", min_time = 1.0 }}\n'
    )
    if not args.dgemm_only:
        text += (
            '[[bench]]\nprobe = "hpl"\nmpi = "openmpi"\ntimeout = 3600\n'
            f"params = {{ n = {args.hpl_n}, nb = {args.nb} }}\n"
        )
    if hpcc:
        text += (
            '[[bench]]\nprobe = "hpcc"\ntimeout = 3600\n'
            f"params = {{ n = {args.hpl_n}, nb = {args.nb}, ranks = {CORES} }}\n"
        )
    return text


def measure(args: argparse.Namespace, env: dict[str, str], hpcc: bool) -> dict[str, dict]:
    """One assay run under ``env``: {figure: {"value", "share", "core"}}."""
    home = scratch_home()
    path = write_suite(home, suite(args, hpcc))
    saved = {k: os.environ.get(k) for k in env}
    os.environ.pop("OPENBLAS_CORETYPE", None)
    os.environ.pop("ASSAY_SIMULATE_OPENBLAS_CORE", None)
    os.environ.update(env)
    try:
        assay("run", str(path), home=home)
        samples = latest_samples(home)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    out: dict[str, dict] = {}
    for s in samples:
        p = s["params"]
        name = None
        if s["metric"] == "compute.dgemm" and s["probe"] == "dgemm":
            name, peak = "DGEMM", p.get("rpeak")
        elif s["metric"] == "compute.hpl":
            name, peak = ("HPL in hpcc" if s["probe"] == "hpcc" else "Rmax"), p.get("rpeak")
        elif s["metric"] == "compute.dgemm" and p.get("variant") == "single":
            name, peak = "SingleDGEMM (hpcc)", p.get("rpeak")
        if name and name not in out:
            core = p.get("blas_core") or p.get("blas_core_asked") or env.get("OPENBLAS_CORETYPE")
            out[name] = {"value": s["value"], "peak": peak, "core": core}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--hpl-n", type=int, default=6000)
    ap.add_argument("--nb", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dgemm-only", action="store_true")
    args = ap.parse_args()
    if args.dgemm_only:
        abba(args)
        return
    runs: dict[str, list[dict[str, dict]]] = {"before": [], "after": [], "by hand": [], "hpcc": []}
    picked = None
    for _ in range(args.rounds):
        runs["before"].append(measure(args, {"OPENBLAS_CORETYPE": "Prescott"}, False))
        after = measure(args, {"ASSAY_SIMULATE_OPENBLAS_CORE": "Prescott"}, False)
        runs["after"].append(after)
        picked = after["DGEMM"]["core"]
        both = measure(args, {"OPENBLAS_CORETYPE": picked}, True)
        runs["by hand"].append({k: v for k, v in both.items() if k in ("DGEMM", "Rmax")})
        runs["hpcc"].append({k: v for k, v in both.items() if "hpcc" in k})

    def med(cond: str, name: str) -> float | None:
        values = [r[name]["value"] for r in runs[cond] if name in r]
        return statistics.median(values) if values else None

    print(f"{args.rounds} rounds; DGEMM n={args.n} on {CORES} threads; HPL N={args.hpl_n} "
          f"NB={args.nb}; assay picked {picked}")  # fmt: skip
    print(f"{'':22s} {'GFLOP/s median [all]':34s} {'% of Rpeak':>10s}  kernel")
    for cond, names in (
        ("before", ("DGEMM", "Rmax")),
        ("after", ("DGEMM", "Rmax")),
        ("by hand", ("DGEMM", "Rmax")),
        ("hpcc", ("SingleDGEMM (hpcc)", "HPL in hpcc")),
    ):
        for name in names:
            values = [r[name]["value"] for r in runs[cond] if name in r]
            if not values:
                continue
            m = statistics.median(values)
            first = next(r[name] for r in runs[cond] if name in r)
            share = f"{100 * m / first['peak']:.1f}%" if first["peak"] else "–"
            each = ", ".join(f"{v / 1e9:.1f}" for v in values)
            print(f"{cond + ' ' + name:22s} {m / 1e9:8.2f} [{each}]{'':10s} {share:>10s}  "
                  f"{first['core']}")  # fmt: skip
    for name in ("DGEMM", "Rmax"):
        a, h, b = med("after", name), med("by hand", name), med("before", name)
        if a and h and b:
            print(f"{name}: after / by hand {a / h:.3f}; after / before {a / b:.2f}")
    a, hp = med("after", "Rmax"), med("hpcc", "HPL in hpcc")
    if a and hp:
        print(f"Rmax after / HPL in hpcc (same kernel) {a / hp:.3f}")


def abba(args: argparse.Namespace) -> None:
    """DGEMM after (assay's pick) against by hand (the same core set by the user), ABBA."""
    after_env = {"ASSAY_SIMULATE_OPENBLAS_CORE": "Prescott"}
    first = measure(args, after_env, False)["DGEMM"]
    core = first["core"]
    values: dict[str, list[float]] = {"after": [], "by hand": []}
    for r in range(args.rounds):
        order = ("after", "by hand") if r % 2 == 0 else ("by hand", "after")
        for cond in order:
            env = after_env if cond == "after" else {"OPENBLAS_CORETYPE": core}
            fig = measure(args, env, False)["DGEMM"]
            assert fig["core"] == core, fig  # both ran the same kernels, as the probe read them
            values[cond].append(fig["value"])
    for cond, vs in values.items():
        each = ", ".join(f"{v / 1e9:.1f}" for v in vs)
        print(f"DGEMM {cond:8s} ({core}): median {statistics.median(vs) / 1e9:7.2f} [{each}]")
    ratios = [a / b for a, b in zip(values["after"], values["by hand"], strict=True)]
    of_medians = statistics.median(values["after"]) / statistics.median(values["by hand"])
    print(f"after / by hand, per round: {', '.join(f'{x:.3f}' for x in ratios)}; median "
          f"{statistics.median(ratios):.3f}; ratio of medians {of_medians:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
