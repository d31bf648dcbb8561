"""Published reference figures as plain data: one ``RefPoint`` per published number.

Values are in canonical SI units (s, B/s, flop/s, op/s), converted at load time from the unit the
page printed; the text as published is kept beside them (``published``), so a reader can check the
transcription. A figure published as "~260 GB/s" has ``approx=True``; one published as a range
("32-33 GB/s per CCX") has ``low``/``high`` and ``value`` is their midpoint; a bound ("over
300,000 IOPS") has only ``low`` (or only ``high``) and ``value`` is that bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from assay.model import Stats

# Which figure of a measurement a published number is compared with: its headline value, or
# one of its statistics (the HB page's "RDMA latency 2.35 usec" is ib_send_lat's t_min).
Stat = Literal["value", "min", "max", "mean", "median"]
# "each": one comparison per measured figure the point matches (e.g. STREAM per CCX);
# "best": only the best of them (a page's headline number is its best figure, as HPL Rmax is).
Pick = Literal["each", "best"]


@dataclass(frozen=True)
class Tolerance:
    """ReFrame-style band around a reference: [ref × (1 + lower), ref × (1 + upper)] is 'same'."""

    lower: float = -0.05
    upper: float = 0.05

    def __str__(self) -> str:
        return f"{self.lower:+.0%}/{self.upper:+.0%}"


@dataclass(frozen=True)
class RefPoint:
    metric: str
    params: dict[str, Any]
    value: float  # canonical SI; the midpoint of a range
    unit: str  # the display unit the page used, normalised (us, GB/s, GFLOP/s, ...)
    published: str = ""  # the figure as printed on the page
    approx: bool = False
    low: float | None = None
    high: float | None = None
    probe: str | None = None
    system: str = ""
    stat: Stat = "value"
    pick: Pick = "each"
    stats: Stats | None = None  # canonical; a table's min/max/mean/stddev columns
    label: str = ""  # what the page calls the column or row ("MPICH 3.3 + CH4")
    section: str = ""  # which table or paragraph of the page
    method: str = ""  # tool and command line as published
    note: str = ""
    tolerance: Tolerance | None = None  # overrides the set's tolerance for this point
    line: int | None = None  # where it is in its file, for messages


@dataclass
class ReferenceSet:
    name: str
    title: str
    path: Path | None = None
    builtin: bool = False
    publisher: str = ""
    url: str = ""
    date: str = ""
    system: str = ""
    source: str = ""
    notes: list[str] = field(default_factory=list)
    tolerance: Tolerance = field(default_factory=Tolerance)
    tolerances: dict[str, Tolerance] = field(default_factory=dict)  # per metric
    points: list[RefPoint] = field(default_factory=list)
    # The page's own one-line workload summary rows, verbatim: (workload, figure as published).
    summary: list[tuple[str, str]] = field(default_factory=list)
    # The node type its figures were measured on, and its inventory (``[node]``, written by
    # 'assay references add' from a run): what 'assay check' expects of a node of this type.
    node: dict[str, Any] = field(default_factory=dict)

    def tolerance_for(self, point: RefPoint) -> Tolerance:
        return point.tolerance or self.tolerances.get(point.metric) or self.tolerance
