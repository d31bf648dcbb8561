"""Helpers of the probes that run a third-party tool under MPI (IOR, mdtest): which MPI it runs
under, whether it is installed, its sizes, its parser's samples, and the probe base class
(``MpiToolProbe``) that drafts its one job and reads its output -- once, here, for each of them.

``tool_skip`` looks at ``PATH`` (``shutil.which``) while planning: it is the one such look left
in these probes, kept in this one place until the plan context carries the tools found on
``PATH`` (``assay.system``), when it becomes a lookup in the context.
"""

from __future__ import annotations

import shutil
from abc import abstractmethod
from typing import Any, ClassVar

from assay.errors import ProbeError
from assay.model import Job, MpiInfo, Sample
from assay.parsers.base import ParseResult
from assay.parsers.fio import parse_size
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams

INSTALL_HINT = (
    "build it from https://github.com/hpc/ior (./bootstrap && ./configure && make; not "
    "packaged in Debian) against one of the MPIs found, then set {tool}=PATH"
)


def size_value(value: Any) -> Any:
    """``"16m"`` style sizes (k/m/g: powers of 1024, as IOR reads them) to bytes."""
    if isinstance(value, str):
        parsed = parse_size(value)
        if parsed is None:
            raise ValueError(f"{value!r} is not a size (e.g. 16777216, 16m, 1m, 4k)")
        return parsed
    return value


def pick_mpi(mpis: list[MpiInfo], wanted: str | None) -> tuple[MpiInfo | None, str | None]:
    """The MPI to launch with, or why there is none (a skip reason)."""
    if wanted:
        chosen = next((m for m in mpis if m.name == wanted), None)
        found = ", ".join(m.name for m in mpis) or "none"
        return chosen, None if chosen else f"MPI {wanted!r} not selected (found: {found})"
    if not mpis:
        return None, "no MPI found: apt-get install openmpi-bin (or mpich)"
    return mpis[0], None


def tool_skip(tool: str, path: str) -> str | None:
    """None when ``path`` runs here, else the skip reason naming what to install."""
    if shutil.which(path):
        return None
    return f"{tool} not found ({path!r}): " + INSTALL_HINT.format(tool=tool)


def tool_samples(result: ParseResult, job: Job, probe: str) -> list[Sample]:
    """The parser's samples, as this probe's, under the plan's params."""
    if not result.complete:
        raise ProbeError(f"{probe}: output is incomplete; missing: {', '.join(result.missing)}")
    if not result.samples:
        raise ProbeError(f"{probe}: no results in the output ({'; '.join(result.warnings)})")
    for s in result.samples:
        s.probe = probe
        s.params = {**job.params, **s.params}
    return result.samples


class MpiToolProbe(Probe):
    """A third-party tool run once per sweep point under the suite's MPI (IOR, mdtest): a
    subclass says how to call it and what to record; drafting and parsing are the same."""

    uses_mpi = True
    default_timeout = 1800.0
    tool: ClassVar[str]  # its name, and the field of its Params naming the binary

    @abstractmethod
    def tool_argv(self, params: Any) -> list[str]:
        """The tool's command line (without mpirun)."""

    @abstractmethod
    def job_params(self, params: Any) -> dict[str, Any]:
        """What the job records of its params."""

    @abstractmethod
    def layout(self, params: Any) -> str:
        """The label's first words: the API and file layout."""

    @abstractmethod
    def parse_output(self, stdout: str, source: str) -> ParseResult:
        """The tool's parser."""

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, self.Params)
        p: Any = params
        mpi, no_mpi = pick_mpi(mpis, p.mpi)
        job_params = self.job_params(p)
        if mpi:
            job_params["mpi"] = mpi.name
        return [
            JobDraft(
                argv=self.tool_argv(p),
                params=job_params,
                launcher="mpi",
                mpi=mpi.name if mpi else None,
                # from the params, else the suite's, else one per core
                ranks=p.ranks or ranks or ctx.system.cores or 1,
                label=f"{self.layout(p)} {mpi.label if mpi else 'no-mpi'}",
                skip_reason=tool_skip(self.tool, getattr(p, self.tool)) or no_mpi,
            )
        ]

    def parse(self, stdout: str, job: Job) -> list[Sample]:
        return tool_samples(self.parse_output(stdout, job.job_id), job, self.name)
