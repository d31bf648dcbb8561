"""The kernel's CPU-list syntax ("0-3,8,10-11"), read and written in one place.

sysfs writes CPU sets this way (``online``, ``shared_cpu_list``, ``thread_siblings_list``,
``node*/cpulist``) and numactl/taskset read it back, so planning and the inventory share it.
"""

from __future__ import annotations


def parse_cpulist(text: str) -> list[int]:
    """Kernel CPU-list syntax ("0-3,8,10-11") as a sorted list; ValueError if malformed."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        if sep:
            # Ranges may carry a stride ("0-15:2") in some kernels' lists.
            high, _, stride = high.partition(":")
            cpus.update(range(int(low), int(high) + 1, int(stride or 1)))
        else:
            cpus.add(int(low))
    return sorted(cpus)


def format_cpulist(cpus: list[int]) -> str:
    """CPUs the way the kernel and numactl write them: [0, 1, 2, 3, 8] -> "0-3,8"."""
    parts: list[str] = []
    ordered = sorted(set(cpus))
    start = prev = None
    for c in [*ordered, None]:
        if c is not None and prev is not None and c == prev + 1:
            prev = c
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = c
    return ",".join(parts)
