"""Which all-pairs files make one matrix: a sweep and the follow-up jobs that continue it.

An all-pairs run measures each MPI's matrix in one sweep job (``allpairs.bin`` in its job
directory); follow-up jobs in the same allocation continue it, each with a file of its own:
**retest** jobs re-measure the links and nodes the sweep flagged (they confirm or not), a
**resume** job measures the pairs left after the sweep lost a node, without it. Their samples
say so: ``kind`` (sweep, retest, resume) and ``sweep_job``, the job id of the sweep they
continue. A follow-up that does not name its sweep (runs stored before ``sweep_job``)
continues the last sweep of its MPI before it. ``--repeat`` gives several sweeps of one MPI,
each with its own follow-ups; the report folds them into one matrix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assay.analysis.statistics.stats import Folded


@dataclass(frozen=True)
class MatrixJob:
    """One job's matrix file, as its samples describe it."""

    rel: str  # the file, relative to the run directory
    kind: str  # sweep | retest | resume
    job: str  # the job's id
    sweep_job: str  # the sweep a follow-up continues ("" when not said)
    mpi: str  # the MPI's label


@dataclass
class SweepJobs:
    """A sweep job and the follow-up jobs that continue it, in stored order."""

    sweep: MatrixJob
    resumes: list[MatrixJob] = field(default_factory=list)
    retests: list[MatrixJob] = field(default_factory=list)

    @property
    def files(self) -> list[str]:
        return [j.rel for j in (self.sweep, *self.resumes, *self.retests)]


def matrix_jobs(folded: Folded) -> list[MatrixJob]:
    """The matrix files the run's samples name (``Folded.matrices``), in stored order."""
    return [
        MatrixJob(
            m["matrix"],
            m.get("kind") or "sweep",
            m.get("job", ""),
            m.get("sweep_job", ""),
            m.get("mpi_label") or m.get("mpi") or "MPI",
        )
        for m in folded.matrices
    ]


def sweeps_by_mpi(jobs: list[MatrixJob]) -> tuple[dict[str, list[SweepJobs]], list[str]]:
    """Each MPI's sweeps with their follow-ups; and, in words, the follow-ups that continue no
    sweep of the run (left out)."""
    out: dict[str, list[SweepJobs]] = {}
    by_job: dict[str, SweepJobs] = {}
    problems = []
    for j in jobs:
        if j.kind not in ("retest", "resume"):
            sweep = SweepJobs(j)
            out.setdefault(j.mpi, []).append(sweep)
            if j.job:
                by_job[j.job] = sweep
            continue
        if j.sweep_job:
            found = by_job.get(j.sweep_job)
        else:
            found = out[j.mpi][-1] if out.get(j.mpi) else None
        if found is None:
            which = f"sweep job {j.sweep_job}" if j.sweep_job else f"a sweep of {j.mpi}"
            problems.append(
                f"The {j.kind} job {j.job or j.rel} continues {which}, which is not in this "
                f"run: its file {j.rel} is left out."
            )
            continue
        (found.resumes if j.kind == "resume" else found.retests).append(j)
    return out, problems
