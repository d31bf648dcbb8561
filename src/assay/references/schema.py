"""The reference-set file format (TOML), validated with pydantic; unknown keys are errors.

A file has provenance keys (``title``, ``publisher``, ``url``, ``date``, ``system``, ``source``,
``notes``), an optional ``[tolerance]`` table (``default`` and per metric, ReFrame-style
``{lower = -0.05, upper = 0.05}`` fractions), the page's one-line summary as ``[[summary]]``
rows, and its figures as single ``[[point]]`` entries or compact ``[[table]]`` entries whose
``columns`` name what each row holds: params (``size``), ``value``, statistics (``n``, ``min``,
``max``, ``mean``, ``median``, ``stddev``) or ``also:UNIT`` (the same figure printed in another
unit, checked against the first when loading). Values are written in the unit the page used.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from assay.units import DISPLAY, canonical_of, metric_info

ParamValue = str | int | float | bool
STAT_COLUMNS = ("n", "min", "max", "mean", "median", "stddev", "p99")


class _Strict(BaseModel):
    # TOML has inf and nan: no published figure, tolerance or statistic is either
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TolSpec(_Strict):
    # -1: every figure down to 0; a band wider than x11 calls any figure 'same' (issue 28)
    lower: float = Field(
        ge=-1, le=0, description="fraction below the reference still 'same', e.g. -0.05"
    )
    upper: float = Field(
        ge=0, le=10, description="fraction above the reference still 'same', e.g. 0.05"
    )


def _check_unit(metric: str, unit: str) -> None:
    if unit not in DISPLAY:
        raise ValueError(f"unknown unit {unit!r}; known: {', '.join(DISPLAY)}")
    want = metric_info(metric).unit
    if canonical_of(unit) != want:
        raise ValueError(
            f"{metric} is measured in {want}; {unit!r} is a unit of {canonical_of(unit)}"
        )


class _Common(_Strict):
    metric: str = Field(pattern=r"^[a-z0-9_]+(\.[a-z0-9_]+)+$")
    unit: str
    probe: str | None = None  # only figures of this probe/tool (fio vs IOR bandwidth)
    system: str = ""  # where it was measured, when not the set's system (Charmed's VM sizes)
    params: dict[str, ParamValue] = Field(default_factory=dict)
    stat: Literal["value", "min", "max", "mean", "median"] = "value"
    pick: Literal["each", "best"] = "each"
    label: str = ""
    section: str = ""
    method: str = ""
    note: str = ""
    tolerance: TolSpec | None = None

    @field_validator("unit")
    @classmethod
    def _unit_fits_metric(cls, unit: str, info: ValidationInfo) -> str:
        if "metric" in info.data:  # else the metric's own error is reported
            _check_unit(info.data["metric"], unit)
        return unit


class PointSpec(_Common):
    value: float | None = Field(default=None, gt=0)
    low: float | None = Field(default=None, gt=0)
    high: float | None = Field(default=None, gt=0)
    approx: bool = False
    published: str = ""
    stats: dict[str, float] | None = None

    @model_validator(mode="after")
    def _value_or_range(self) -> PointSpec:
        if (self.value is None) == (self.low is None and self.high is None):
            raise ValueError(
                "give either value, or low and/or high (a range, or a bound: 'over 300k')"
            )
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")
        unknown = set(self.stats or {}) - set(STAT_COLUMNS)
        if unknown:
            raise ValueError(f"unknown stats {sorted(unknown)}; known: {', '.join(STAT_COLUMNS)}")
        return self


class TableSpec(_Common):
    columns: list[str] = Field(min_length=2)
    rows: list[list[float]] = Field(min_length=1)
    value: str = "value"  # which column is the headline value (ib_send_lat: "median", t_typical)

    @model_validator(mode="after")
    def _columns_and_rows(self) -> TableSpec:
        if self.value not in self.columns:
            raise ValueError(f"value column {self.value!r} is not in columns {self.columns}")
        for col in self.columns:
            if col.startswith("also:"):
                _check_unit(self.metric, col[5:])
        return self  # row lengths are checked by the loader, which knows each row's line


class SummarySpec(_Strict):
    workload: str
    published: str


class NodeSpec(_Strict):
    """``[node]``: the node type a set was measured on and what such a node has (written by
    'assay references add' from a run; 'assay check' holds nodes of this type to it)."""

    cpu_model: str = ""
    sockets: int = Field(default=0, ge=0)
    cores: int | None = Field(default=None, ge=1)
    threads: int | None = Field(default=None, ge=1)
    memory_bytes: int | None = Field(default=None, ge=1)
    gpus: int | None = Field(default=None, ge=0)
    gpu_model: str = ""
    kernel: str = ""
    # an MPI is named by its first word ("Open MPI 4.1.5"): a blank one names none
    mpis: list[Annotated[str, Field(pattern=r"\S")]] = Field(default_factory=list)
    links: dict[str, Annotated[float, Field(gt=0)]] = Field(
        default_factory=dict, description="interface -> Gb/s"
    )


class SetSpec(_Strict):
    name: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    title: str
    publisher: str = ""
    url: str = ""
    date: str = ""
    system: str = ""
    source: str = ""
    notes: list[str] = Field(default_factory=list)
    tolerance: dict[str, TolSpec] = Field(default_factory=dict)
    summary: list[SummarySpec] = Field(default_factory=list)
    node: NodeSpec | None = None
    point: list[PointSpec] = Field(default_factory=list)
    table: list[TableSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _has_figures(self) -> SetSpec:
        if not self.point and not self.table:
            raise ValueError("no [[point]] or [[table]]: a reference set needs figures")
        return self


def row_params(spec: TableSpec, row: list[float]) -> dict[str, Any]:
    """The params a table row adds to the table's own (e.g. size); integral floats become ints."""
    out: dict[str, Any] = {}
    for col, cell in zip(spec.columns, row, strict=True):
        if col == spec.value or col in STAT_COLUMNS or col.startswith("also:") or col == "value":
            continue
        out[col] = int(cell) if float(cell).is_integer() else cell
    return out
