"""``[[mpi]]`` of config.toml, declared by the toolchain that reads it (``mpis``): an MPI
implementation discovery would not find. Apart from ``mpis`` so that finding MPIs without a
config does not import pydantic."""

from __future__ import annotations

from pydantic import Field

from assay.config.schema import ConfigTable, Name, Section, Text


class MpiEntry(ConfigTable):
    """One ``[[mpi]]``: an MPI implementation discovery would not find."""

    name: Name = Field(description="the name runs use for it (--mpi NAME)")
    mpicc: Name = Field(description="its compiler wrapper")
    launcher: Name = Field(description="its launcher (mpirun, mpiexec)")
    launcher_flags: list[Text] = Field([], description="arguments every launch gets")


SECTION = Section("mpi", MpiEntry, many=True)
