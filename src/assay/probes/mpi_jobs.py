"""Job drafts for the native MPI probes (p2p, coll): one job per MPI implementation.

The same probe source is built with each MPI's compiler wrapper and launched with its own
launcher, so the report can put Open MPI and MPICH side by side.
"""

from __future__ import annotations

from pydantic import Field

from assay.model import Build, MpiInfo
from assay.probes.base import JobDraft, ProbeParams


class OsuLoopParams(ProbeParams):
    """The message sizes and loop counts every OSU-style probe takes. None means the probe's
    default, which is OSU 5.x's (the C probe applies it, so the command line stays short)."""

    min_size: int | None = Field(default=None, ge=0)
    max_size: int | None = Field(default=None, ge=1)
    iterations: int | None = Field(default=None, ge=1)
    warmup: int | None = Field(default=None, ge=0)
    iterations_large: int | None = Field(default=None, ge=1)
    warmup_large: int | None = Field(default=None, ge=0)
    large_threshold: int | None = Field(default=None, ge=0)


def options_argv(params: ProbeParams, skip: tuple[str, ...] = ()) -> list[str]:
    """``--name value`` for every param that is set, in schema order (None: the probe's own
    default, so it is left off the command line)."""
    argv: list[str] = []
    for name, value in params.model_dump().items():
        if value is None or name in skip:
            continue
        argv += [f"--{name.replace('_', '-')}", str(value)]
    return argv


def per_mpi_drafts(
    params: ProbeParams, mpis: list[MpiInfo], *, source: str, ranks: int, what: dict[str, str]
) -> list[JobDraft]:
    """One job per MPI implementation, the same probe built with each one's compiler, so the
    report can put them side by side."""
    label = " ".join(what.values())
    # What the job measures (--mode, --op) leads the command line, as one would type it.
    chosen = [arg for name, value in what.items() for arg in (f"--{name}", value)]
    return [
        JobDraft(
            argv=["{exe}", *chosen, *options_argv(params, skip=tuple(what))],
            params={**what, "mpi": mpi.name, "mpi_label": mpi.label},
            spawn="mpi",
            mpi=mpi.name,
            ranks=ranks,
            build=Build(source, mpi.name, ("-O2",), ("-lm",)),
            label=f"{label} {mpi.label}",
        )
        for mpi in mpis
    ]
