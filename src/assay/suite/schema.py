"""The suite schema. Unknown keys are errors, so a typo never silently changes a run.

name = "quick"
description = "STREAM and MPI point-to-point in a few minutes"
repeat = 1

[[bench]]
probe = "p2p"
mpi = "all"            # every MPI found; or ["openmpi", "mpich"]
ranks = 2
params = { max_size = 4194304 }
sweep = { mode = ["latency", "bandwidth"] }   # one job per value (cartesian product)
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class BenchSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    probe: str
    name: str | None = None
    mpi: str | list[str] | None = None
    ranks: int | None = Field(default=None, ge=1)
    nodes: int = Field(default=1, ge=1)
    ppn: int | None = Field(default=None, ge=1)
    repeat: int | None = Field(default=None, ge=1)
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    params: dict[str, Any] = Field(default_factory=dict)
    sweep: dict[str, list[Any]] = Field(default_factory=dict)

    @field_validator("sweep")
    @classmethod
    def _non_empty(cls, sweep: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in sweep.items():
            if not values:
                raise ValueError(f"sweep {key!r} has no values")
        return sweep


class CheckSpec(BaseModel):
    """``[check]``: a suite made for ``assay check`` (the levels' built-in suites): its time
    budget, where it can run, and the figures it judges."""

    model_config = ConfigDict(extra="forbid")

    level: int | None = Field(default=None, ge=1, le=3)
    budget_s: float = Field(gt=0, allow_inf_nan=False, description="seconds it should take")
    min_nodes: int = Field(default=1, ge=1, description="nodes it needs (all-pairs: 2)")
    max_nodes: int | None = Field(default=None, ge=1, description="1: one node, no allocation")
    metrics: list[str] = Field(default_factory=list, description="the figures it judges")
    contents: list[str] = Field(default_factory=list, description="what it runs, in words")


class SuiteSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    repeat: int = Field(default=1, ge=1)
    check: CheckSpec | None = None
    bench: list[BenchSpec] = Field(min_length=1)
