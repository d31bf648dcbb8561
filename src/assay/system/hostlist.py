"""Slurm's host list syntax, expanded in pure Python: ``a[1-3,5],b[01-02]`` → a1 a2 a3 a5 b01
b02, as ``scontrol show hostnames`` prints it (tests/derive/test_topology.py holds the two
side by side on Slurm 22.05's own output).

The rules, as Slurm 22.05 applies them:

- items are separated by commas or white space outside brackets; empty items are skipped;
- ``[...]`` holds numbers and ranges ``lo-hi`` separated by commas, in the order given
  (duplicates kept); a range is as wide as its ``lo`` is written (``[001-5]`` → 001…005,
  ``[9-11]`` → 9 10 11); ``hi < lo``, an empty bracket, a step (``1-9:2``) or a bracket left open
  is an error;
- several brackets in one item are a product (``r[1-2]-n[1-2]``); Slurm lists it with the last
  bracket varying fastest, then the first, the second, … (the last but one slowest);
- text after the last bracket of an item (``a[1-2]b``) is refused, as Slurm refuses it.

A list is counted before it is expanded, and one of more than ``MAX_HOSTS`` names is refused
(``node[01-99999999]`` in a topology file was 10^8 names built first); a number is ASCII
digits, at most 18 of them (``int()`` of a 5,000-digit one is a ValueError).
"""

from __future__ import annotations

import itertools
import math
import re

from assay.errors import AssayError

RANGE = re.compile(r"^([0-9]{1,18})(?:-([0-9]{1,18}))?$")
# Names of one list: the node bound of an allocation (launch.slurm.options.MAX_NODES), above
# the largest machine.
MAX_HOSTS = 200_000


class HostlistError(AssayError):
    """A host list Slurm would refuse too."""


def _ranges(inside: str, expr: str) -> list[tuple[str, int]]:
    """A bracket's ranges as (lo as written, count), checked, nothing expanded."""
    out = []
    for part in inside.split(","):
        m = RANGE.match(part.strip())
        if not m or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise HostlistError(f"invalid range {part!r} in the host list {expr!r}")
        lo, hi = m.group(1), m.group(2) or m.group(1)
        out.append((lo, int(hi) - int(lo) + 1))
    return out


def _numbers(ranges: list[tuple[str, int]]) -> list[str]:
    # zfill, not a nested format spec: a third of the time of expanding 200,000 names
    return [str(v).zfill(len(lo)) for lo, n in ranges for v in range(int(lo), int(lo) + n)]


def count_hostlist(expr: str) -> int:
    """How many names a host list holds, without making them (a HostlistError when Slurm
    would refuse it)."""
    total = 0
    for item in _items(expr):
        parts = re.split(r"\[([^\]]*)\]", item)
        total += math.prod(sum(n for _, n in _ranges(x, expr)) for x in parts[1::2])
    return total


def _items(expr: str) -> list[str]:
    """The items of a host list: split at commas and white space outside brackets."""
    items, depth, current = [], 0, []
    for ch in expr:
        if ch == "[":
            if depth:
                raise HostlistError(f"a bracket inside a bracket in the host list {expr!r}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(f"']' without '[' in the host list {expr!r}")
            depth = 0
        elif not depth and (ch == "," or ch.isspace()):
            items.append("".join(current))
            current = []
            continue
        current.append(ch)
    if depth:
        raise HostlistError(f"a bracket left open in the host list {expr!r}")
    items.append("".join(current))
    return [i for i in items if i]


def _expand_item(item: str, expr: str) -> list[str]:
    parts = re.split(r"\[([^\]]*)\]", item)  # text, inside, text, inside, …, text
    texts, ranges = parts[0::2], [_numbers(_ranges(x, expr)) for x in parts[1::2]]
    if not ranges:
        return [item]
    if texts[-1]:
        raise HostlistError(
            f"text after the last bracket ({item!r}) in the host list {expr!r}",
            hint="Slurm refuses it too; write each name out, or use a prefix and a range",
        )
    out: list[str] = []
    # Slurm's order: the last bracket fastest, then the first, the second, … (see above); the
    # name up to the last bracket is joined once per head, not once per name
    for head in itertools.product(*reversed(ranges[:-1])):
        stem = "".join(t + n for t, n in zip(texts, reversed(head), strict=False)) + texts[-2]
        out.extend([stem + last for last in ranges[-1]])
    return out


def expand_hostlist(expr: str, limit: int = MAX_HOSTS) -> list[str]:
    """Every host name of a Slurm host list, in Slurm's order (a HostlistError when Slurm
    would refuse it, or when it holds more than ``limit`` names: counted first)."""
    n = count_hostlist(expr)
    if n > limit:
        shown = expr if len(expr) <= 80 else expr[:77] + "..."
        raise HostlistError(f"the host list {shown!r} names {n:,} hosts: more than {limit:,}")
    return [name for item in _items(expr) for name in _expand_item(item, expr)]


def compress_hostlist(hosts: list[str]) -> str:
    """Host names as one Slurm host list (``anode[1-16]``, ``n[001-003],login``): what Slurm
    prints, and what stays one line at thousands of nodes. Names keep their first-seen order by
    prefix; numbers within a prefix are sorted; a zero-padded width is its own group, as Slurm
    keeps it."""
    groups: dict[tuple[str, int], list[int]] = {}
    for host in hosts:
        m = re.fullmatch(r"(.*?)(\d+)", host)
        if not m:
            groups.setdefault((host, -1), [])
            continue
        digits = m.group(2)
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        groups.setdefault((m.group(1), width), []).append(int(digits))
    out = []
    for (prefix, width), numbers in groups.items():
        if width < 0:
            out.append(prefix)
            continue
        runs: list[list[int]] = []
        for n in sorted(set(numbers)):
            if runs and n == runs[-1][1] + 1:
                runs[-1][1] = n
            else:
                runs.append([n, n])
        fmt = f"{{:0{width}d}}" if width else "{}"
        parts = [fmt.format(a) if a == b else f"{fmt.format(a)}-{fmt.format(b)}" for a, b in runs]
        only = len(parts) == 1 and runs[0][0] == runs[0][1]
        out.append(prefix + parts[0] if only else f"{prefix}[{','.join(parts)}]")
    return ",".join(out)
