"""IOR: parallel file system bandwidth, MPI-launched (github.com/hpc/ior).

One job per sweep point: ``mpirun -np RANKS ior -a API -b BLOCK -t XFER -s SEGMENTS -i ITER
-w -r -e [-F] [-C] -o TESTFILE``, with the suite's MPI (the bench's ``mpi``; the first one
selected unless ``mpi`` names one: an ``ior`` binary runs only under the MPI it was built
with). Its text report is read by ``assay.parsers.ior`` (the ``Summary of all tests`` table:
``storage.bandwidth`` and ``storage.iops`` per operation, stats over the iterations).

Params (defaults in ``IorParams``): ``api`` (``POSIX`` or ``MPIIO``, IOR ``-a``),
``file_per_process`` (``-F``; else one shared file), ``block_size`` (``-b``, bytes each task
writes contiguously per segment), ``transfer_size`` (``-t``, bytes per I/O call; must divide the
block size, as IOR requires), ``segments`` (``-s``), ``iterations`` (``-i``), ``test_dir``
(where the test file goes; default: the job's own directory, which IOR cleans after itself --
no ``-k``), ``fsync`` (``-e``: fsync on close, so a write's bandwidth includes reaching the
storage), ``reorder`` (``-C``: each task reads back another node's data, so no client cache
serves the read), ``ranks`` (default: one per core), ``ior`` (the binary), ``extra_args``.

IOR is not packaged in Debian: when the binary is not found the job is planned as *skipped*,
its reason naming what to install, and the run goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from assay.parsers import ior as ior_parser
from assay.probes.base import ProbeParams
from assay.probes.external import MpiToolProbe, size_value

MIB = 2**20
TESTFILE = "ior-testfile"


def scratch(test_dir: str | None, name: str) -> str:
    """A path in ``test_dir`` (absolute, taken from where ``assay run`` started), or one in the
    job's own directory, where the job runs (relative)."""
    if test_dir is None:
        return name
    return str(Path(test_dir).expanduser().absolute() / name)


class IorParams(ProbeParams):
    ior: str = Field(default="ior", description="the ior binary (name on PATH, or a path)")
    api: Literal["POSIX", "MPIIO"] = "POSIX"
    file_per_process: bool = Field(default=True, description="-F; false: one shared file")
    block_size: int = Field(default=16 * MIB, gt=0, description="-b, bytes per task and segment")
    transfer_size: int = Field(default=MIB, gt=0, description="-t, bytes per I/O call")
    segments: int = Field(default=1, ge=1, description="-s")
    iterations: int = Field(default=3, ge=1, description="-i")
    test_dir: str | None = Field(default=None, description="default: the job's directory")
    fsync: bool = Field(default=True, description="-e: fsync when a written file is closed")
    reorder: bool = Field(default=True, description="-C: read back another node's data")
    ranks: int | None = Field(default=None, ge=1, description="default: one per core")
    mpi: str | None = Field(default=None, description="the MPI ior was built with")
    extra_args: list[str] = Field(default_factory=list)

    @field_validator("block_size", "transfer_size", mode="before")
    @classmethod
    def _sizes(cls, value: Any) -> Any:
        return size_value(value)

    @model_validator(mode="after")
    def _divides(self) -> IorParams:
        # IOR refuses it: "block size must be a multiple of transfer size" (ior.c)
        if self.block_size % self.transfer_size:
            raise ValueError(
                f"block_size {self.block_size} is not a multiple of transfer_size "
                f"{self.transfer_size} (IOR requires it)"
            )
        return self


def ior_argv(params: IorParams) -> list[str]:
    argv = [
        params.ior,
        "-a", params.api,
        "-b", str(params.block_size),
        "-t", str(params.transfer_size),
        "-s", str(params.segments),
        "-i", str(params.iterations),
        "-w", "-r",
        "-o", scratch(params.test_dir, TESTFILE),
    ]  # fmt: skip
    if params.file_per_process:
        argv.append("-F")
    if params.fsync:
        argv.append("-e")
    if params.reorder:
        argv.append("-C")
    return argv + list(params.extra_args)


class IorProbe(MpiToolProbe):
    name = "ior"
    summary = "IOR parallel I/O bandwidth (MPI; POSIX or MPIIO); skipped when ior is missing"
    Params = IorParams
    tool = "ior"
    layouts = ("fpp", "shared")
    command = staticmethod(ior_argv)
    parser = staticmethod(ior_parser.parse)

    def job_params(self, params: IorParams) -> dict[str, Any]:
        return {
            "block_size": params.block_size,
            "transfer_size": params.transfer_size,
            "segments": params.segments,
            "iterations": params.iterations,
        }
