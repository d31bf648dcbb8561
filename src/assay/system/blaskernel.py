"""Which OpenBLAS kernels a CPU should run: its ISA flags against the core OpenBLAS picked.

OpenBLAS (built with DYNAMIC_ARCH, as Debian's is) picks its kernels when it loads, from the
CPU's identity; a CPU newer than the library is not in its tables and gets a fallback — Debian's
0.3.21 runs its Prescott (SSE3) kernels on an Emerald Rapids Xeon (family 6, model 207), a
fifth of what its SkylakeX (AVX-512) kernels reach there. ``OPENBLAS_CORETYPE`` names the
kernels to use instead.

This module is pure: ISA flags (``System.isa``) and a core name in, a level or a recommendation
out. The names recommended are the ones OpenBLAS 0.3.21's DYNAMIC_ARCH build accepts in
``OPENBLAS_CORETYPE`` (tried one by one with Debian's libopenblas0-pthread 0.3.21+ds-4:
"Cooperlake", "SapphireRapids" and "Dhyana" are *not* accepted there — "Core not found", and
OpenBLAS falls back on its own detection — so none of them is recommended, though all three
are known as cores it may pick by itself).

Levels: 0 SSE2/SSE3 kernels, 1 AVX, 2 AVX2 with FMA3, 3 AVX-512 (F, DQ, BW, VL).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

LEVEL_NAME = {0: "SSE3", 1: "AVX", 2: "AVX2", 3: "AVX-512"}

# OpenBLAS x86-64 core names (lower case, as openblas_get_corename() prints them, compared
# without case) and the widest SIMD their DGEMM kernels use.
CORE_LEVEL: dict[str, int] = {
    **dict.fromkeys(
        (
            "katmai", "coppermine", "northwood", "prescott", "banias", "atom", "core2",
            "penryn", "dunnington", "nehalem", "athlon", "opteron", "opteron(sse3)",
            "barcelona", "nano", "bobcat", "generic", "unknown",
        ),
        0,
    ),
    **dict.fromkeys(("sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"), 1),
    **dict.fromkeys(("haswell", "zen", "dhyana"), 2),
    **dict.fromkeys(("skylakex", "cooperlake", "sapphirerapids"), 3),
}  # fmt: skip

# The ISA flags each level's kernels execute (Linux /proc/cpuinfo names).
LEVEL_FLAGS: dict[int, tuple[str, ...]] = {
    1: ("avx",),
    2: ("avx2", "fma"),
    3: ("avx512f", "avx512dq", "avx512bw", "avx512vl"),
}

# The core to ask for at each level, by vendor: names 0.3.21 accepts (see above). AMD's AVX2
# parts get "Zen" (Haswell's kernels, Zen's blocking); level 1 gets Sandybridge's plain AVX
# kernels, never Bulldozer's, which use FMA4 (no Zen has it: SIGILL).
ASK_FOR: dict[int, str] = {3: "SkylakeX", 2: "Haswell", 1: "Sandybridge"}
AMD_ASK_FOR: dict[int, str] = {2: "Zen"}
AMD_VENDORS = ("AMD", "Hygon", "AuthenticAMD", "HygonGenuine")


def isa_level(isa: Iterable[str] | None) -> int | None:
    """The widest kernel level the CPU's flags allow; None when the flags are unknown."""
    if isa is None:
        return None
    flags = set(isa)
    if not flags & {"sse2", "sse3", "sse4_2", "avx"}:
        return None  # not an x86 flag list (Arm, or an empty record): no OpenBLAS x86 level
    level = 0
    for lvl in sorted(LEVEL_FLAGS):
        if all(f in flags for f in LEVEL_FLAGS[lvl]):
            level = lvl
    return level


def core_level(core: str | None) -> int | None:
    """The level of an OpenBLAS core's kernels; None for a name this table does not know."""
    return CORE_LEVEL.get((core or "").strip().lower())


def describe(core: str | None) -> str:
    """'Prescott (SSE3 kernels)', or the name alone when its level is unknown."""
    level = core_level(core)
    return f"{core} ({LEVEL_NAME[level]} kernels)" if level is not None else str(core)


def candidates(isa: Iterable[str] | None, vendor: str | None, above: int) -> list[str]:
    """The cores to try, best first: one per level the CPU allows, down to ``above`` + 1."""
    top = isa_level(isa)
    if top is None:
        return []
    amd = (vendor or "") in AMD_VENDORS
    out = []
    for lvl in range(top, above, -1):
        name = (AMD_ASK_FOR.get(lvl) if amd else None) or ASK_FOR.get(lvl)
        if name:
            out.append(name)
    return out


@dataclass(frozen=True)
class KernelAdvice:
    """What to do about the core OpenBLAS picked: ``try_cores`` best first (empty: nothing)."""

    try_cores: tuple[str, ...]
    reason: str


def advise(isa: Iterable[str] | None, vendor: str | None, detected: str | None) -> KernelAdvice:
    """The better cores to try when OpenBLAS's own pick is below what the CPU's flags allow.

    An unknown core name or unknown flags give no advice (nothing is known to be wrong).
    """
    flags = list(isa) if isa is not None else None
    cpu, got = isa_level(flags), core_level(detected)
    if cpu is None or got is None:
        return KernelAdvice((), f"no advice: core {detected!r} or the CPU's flags not known")
    if got >= cpu:
        return KernelAdvice((), f"{describe(detected)} uses the CPU's {LEVEL_NAME[cpu]}")
    return KernelAdvice(
        tuple(candidates(flags, vendor, got)),
        f"OpenBLAS picked {describe(detected)} on a CPU with {LEVEL_NAME[cpu]}",
    )


def below_isa(core: str | None, isa: Iterable[str] | None) -> str | None:
    """Why ``core``'s kernels cannot reach this CPU's peak, or None when they can (or when
    either is unknown): 'Prescott (SSE3 kernels) on a CPU with AVX-512'."""
    cpu, got = isa_level(list(isa) if isa is not None else None), core_level(core)
    if cpu is None or got is None or got >= cpu:
        return None
    return f"{describe(core)} on a CPU with {LEVEL_NAME[cpu]}"
