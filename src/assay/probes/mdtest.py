"""mdtest: file system metadata rates, MPI-launched (github.com/hpc/ior, which ships mdtest).

One job per sweep point: ``mpirun -np RANKS mdtest -a API -n ITEMS -i ITER -d DIR [-u] [-F]
[-w BYTES] [-e BYTES]`` with the suite's MPI (as for ``ior``: the first selected unless ``mpi``
names one). Its ``SUMMARY rate`` table is read by ``assay.parsers.mdtest``:
``storage.metadata.<operation>`` (file creation, stat, read, removal...) in op/s, stats over the
iterations.

Params (defaults in ``MdtestParams``): ``api`` (``POSIX`` or ``MPIIO``, ``-a``),
``file_per_process`` (``-u``: each task works in a directory of its own; false: every task in
one shared directory -- the metadata contention case), ``items`` (``-n``, per task),
``iterations`` (``-i``), ``write_bytes`` / ``read_bytes`` (``-w`` / ``-e``: the data written
into each new file and read back -- mdtest's block size), ``files_only`` (``-F``),
``test_dir`` (``-d``; default ``mdtest-scratch`` in the job's directory; mdtest creates it and
removes its tree), ``ranks`` (default: one per core), ``mdtest`` (the binary), ``extra_args``.

mdtest is not packaged in Debian: without the binary the job is planned as *skipped*, its
reason naming what to install.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from assay.parsers import mdtest as mdtest_parser
from assay.probes.base import ProbeParams
from assay.probes.external import MpiToolProbe, size_value

TESTDIR = "mdtest-scratch"


class MdtestParams(ProbeParams):
    mdtest: str = Field(default="mdtest", description="the mdtest binary (name or path)")
    api: Literal["POSIX", "MPIIO"] = "POSIX"
    file_per_process: bool = Field(default=True, description="-u: a directory per task")
    items: int = Field(default=1000, ge=1, description="-n, files (and dirs) per task")
    iterations: int = Field(default=3, ge=1, description="-i")
    write_bytes: int = Field(default=0, ge=0, description="-w, bytes written to each file")
    read_bytes: int = Field(default=0, ge=0, description="-e, bytes read from each file")
    files_only: bool = Field(default=True, description="-F: files only, no directory phases")
    test_dir: str | None = Field(default=None, description="-d; default: job directory")
    ranks: int | None = Field(default=None, ge=1, description="default: one per core")
    mpi: str | None = Field(default=None, description="the MPI mdtest was built with")
    extra_args: list[str] = Field(default_factory=list)

    @field_validator("write_bytes", "read_bytes", mode="before")
    @classmethod
    def _sizes(cls, value: Any) -> Any:
        return size_value(value)


def test_directory(test_dir: str | None) -> str:
    """mdtest's ``-d``: the user's directory as given (absolute), else one in the job's."""
    if test_dir is None:
        return TESTDIR
    return str(Path(test_dir).expanduser().absolute())


def mdtest_argv(params: MdtestParams) -> list[str]:
    argv = [
        params.mdtest,
        "-a", params.api,
        "-n", str(params.items),
        "-i", str(params.iterations),
        "-d", test_directory(params.test_dir),
    ]  # fmt: skip
    if params.file_per_process:
        argv.append("-u")
    if params.files_only:
        argv.append("-F")
    if params.write_bytes:
        argv += ["-w", str(params.write_bytes)]
    if params.read_bytes:
        argv += ["-e", str(params.read_bytes)]
    return argv + list(params.extra_args)


class MdtestProbe(MpiToolProbe):
    name = "mdtest"
    summary = "mdtest metadata rates (MPI; create/stat/read/remove); skipped when missing"
    Params = MdtestParams
    tool = "mdtest"
    layouts = ("unique-dir", "shared-dir")
    command = staticmethod(mdtest_argv)
    parser = staticmethod(mdtest_parser.parse)

    def job_params(self, params: MdtestParams) -> dict[str, Any]:
        return {
            "items_per_rank": params.items,
            "iterations": params.iterations,
            "write_bytes": params.write_bytes,
            "read_bytes": params.read_bytes,
        }
