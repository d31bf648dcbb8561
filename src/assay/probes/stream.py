"""STREAM (Copy, Scale, Add, Triad) on the native OpenMP probe, by McCalpin's rules."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from assay.model import Build, Job, MpiInfo, Sample
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl

STREAM_DEFAULT_ELEMENTS = 10_000_000  # stream.c's STREAM_ARRAY_SIZE
ARRAYS = 3
ELEMENT_BYTES = 8


class StreamParams(ProbeParams):
    elements: int | None = Field(default=None, ge=1000, description="per array; default: auto")
    ntimes: int = Field(default=10, ge=2, description="iterations; the first is not counted")
    threads: int | Literal["all"] = "all"
    bind: str = Field(default="spread", description="OMP_PROC_BIND")
    places: str = Field(default="cores", description="OMP_PLACES")


def stream_elements(l3_bytes: int | None, memory_bytes: int | None) -> int:
    """STREAM's rule: each array at least 4x the sum of all last-level caches.

    Never below stream.c's default, and never more than half the memory for the three arrays.
    """
    wanted = STREAM_DEFAULT_ELEMENTS
    if l3_bytes:
        wanted = max(wanted, math.ceil(4 * l3_bytes / ELEMENT_BYTES))
    if memory_bytes:
        wanted = min(wanted, memory_bytes // 2 // (ARRAYS * ELEMENT_BYTES))
    return int(wanted)


class StreamProbe(Probe):
    name = "stream"
    summary = "memory bandwidth: STREAM Copy/Scale/Add/Triad (OpenMP, validated)"
    Params = StreamParams
    default_timeout = 600.0

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, StreamParams)
        elements = params.elements or stream_elements(ctx.system.l3_bytes, ctx.system.memory_bytes)
        threads = ctx.system.cores or ctx.system.threads or 1
        if params.threads != "all":
            threads = params.threads
        env = {
            "OMP_NUM_THREADS": str(threads),
            "OMP_PROC_BIND": params.bind,
            "OMP_PLACES": params.places,
        }
        return [
            JobDraft(
                argv=["{exe}", "--elements", str(elements), "--ntimes", str(params.ntimes)],
                params={"threads": threads, "bind": params.bind, "places": params.places},
                env=env,
                build=Build("stream.c", "cc", ("-O3", "-march=native", "-fopenmp"), ("-lm",)),
                label=f"{threads} threads",
            )
        ]

    def parse(self, stdout: str, job: Job) -> list[Sample]:
        return parse_jsonl(stdout, self.name, job.params)
