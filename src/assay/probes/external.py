"""Helpers of the probes that run a third-party tool under MPI (IOR, mdtest): which MPI it runs
under, whether it is installed, its sizes, its parser's samples, and the probe base class
(``MpiToolProbe``) that drafts its one job and reads its output -- once, here, for each of them.

``tool_skip`` asks the plan context's facts (``PlanFacts.which``) whether the tool is there:
planning reads no ``PATH`` itself.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from assay.errors import ProbeError
from assay.model import Job, MpiInfo, Sample
from assay.parsers.base import ParseResult
from assay.parsers.fio import parse_size
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams
from assay.system.facts import PlanFacts

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


def tool_skip(tool: str, path: str, facts: PlanFacts) -> str | None:
    """None when ``path`` runs here, else the skip reason naming what to install."""
    if facts.which(path):
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
    subclass names its command line and parser (``staticmethod``s), its two layouts and what
    the job records; drafting and parsing are the same for each."""

    uses_mpi = True
    default_timeout = 1800.0
    tool: ClassVar[str]  # its name, and the field of its Params naming the binary
    command: ClassVar[Callable[[Any], list[str]]]  # its command line (without mpirun)
    layouts: ClassVar[tuple[str, str]]  # the label's layout: a file (or dir) per process, shared
    parser: ClassVar[Callable[..., ParseResult]]  # the tool's parser, ``parse(text, source=)``

    @abstractmethod
    def job_params(self, params: Any) -> dict[str, Any]:
        """What the job records of its own params (the API, layout and directory are added)."""

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, self.Params)
        p: Any = params
        mpi, no_mpi = pick_mpi(mpis, p.mpi)
        job_params = {
            "api": p.api,
            "file_per_proc": p.file_per_process,
            **self.job_params(p),
            "test_dir": p.test_dir or "job directory",
        }
        if mpi:
            job_params["mpi"] = mpi.name
        return [
            JobDraft(
                argv=self.command(p),
                params=job_params,
                spawn="mpi",
                mpi=mpi.name if mpi else None,
                # from the params, else the suite's, else one per core
                ranks=p.ranks or ranks or ctx.system.cores or 1,
                label=f"{p.api.lower()} {self.layouts[0 if p.file_per_process else 1]} "
                + (mpi.label if mpi else "no-mpi"),
                skip_reason=tool_skip(self.tool, getattr(p, self.tool), ctx.facts) or no_mpi,
            )
        ]

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        return tool_samples(self.parser(stdout, source=job.job_id), job, self.name)
