"""The FLOPs-per-cycle table (``assay/data/flops_per_cycle.toml``): how many floating-point
operations one core of each micro-architecture completes per cycle, and why (its sources).

Read by ``assay.system.peak``; kept apart so that the table's schema and checks have one home.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from assay.errors import AssayError
from assay.inputfile import load_toml

Precision = Literal["dp", "sp"]
TABLE_FILE = "flops_per_cycle.toml"


class FlopsTableError(AssayError):
    """The FLOPs-per-cycle table shipped with assay is malformed (a bug in assay)."""


@dataclass(frozen=True)
class UarchEntry:
    """One micro-architecture's FLOPs per cycle per core, with how they arise and why."""

    name: str
    simd: str  # "AVX2, 2 FMA units, 256-bit": for the derivation sentence
    pipes: int
    vector_bits: int
    flops_per_lane: int
    dp: int
    sp: int
    requires: tuple[str, ...]
    source: tuple[str, ...]
    note: str = ""
    licence: str = ""  # the clock this core runs vector FMA at, when below its nominal clock

    def flops_per_cycle(self, precision: Precision) -> int:
        return self.dp if precision == "dp" else self.sp


_ENTRY_INTS = ("pipes", "vector_bits", "flops_per_lane", "dp", "sp")


def parse_table(data: Mapping[str, Any], origin: str = TABLE_FILE) -> dict[str, UarchEntry]:
    """Entries of a parsed flops_per_cycle.toml; any malformed entry is an error."""
    entries: dict[str, UarchEntry] = {}
    for name, raw in (data.get("uarch") or {}).items():
        where = f"{origin}: [uarch.{name}]"
        if not isinstance(raw, Mapping):
            raise FlopsTableError(f"{where} is not a table")
        try:
            ints = {k: raw[k] for k in _ENTRY_INTS}
            simd, requires, source = raw["simd"], raw["requires"], raw["source"]
        except KeyError as exc:
            raise FlopsTableError(f"{where} lacks the key {exc}") from None
        if not all(isinstance(v, int) and v > 0 for v in ints.values()):
            raise FlopsTableError(f"{where}: {', '.join(_ENTRY_INTS)} must be positive integers")
        if not (isinstance(source, list) and source and all(isinstance(s, str) for s in source)):
            raise FlopsTableError(f"{where}: source must be a non-empty list of strings")
        entries[name] = UarchEntry(
            name=name,
            simd=str(simd),
            requires=tuple(str(r) for r in requires),
            source=tuple(source),
            note=str(raw.get("note", "")),
            licence=str(raw.get("licence", "")),
            **ints,
        )
    if not entries:
        raise FlopsTableError(f"{origin} has no [uarch.*] entries")
    return entries


@functools.cache
def load_table() -> dict[str, UarchEntry]:
    """The table shipped in the package (read once)."""
    text = (resources.files("assay") / "data" / TABLE_FILE).read_text()
    return parse_table(load_toml(text))
