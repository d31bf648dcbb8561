"""What each probe family needs, and whether a ``System`` has it: the body of ``assay doctor``.

Judged from the ``System`` record alone (compilers, tools, mpis, nics, gpus), so that doctor
says exactly what a run would record. Package names are Debian/Ubuntu's, as in
``scripts/install-system-deps``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from assay.model import System
from assay.system import gpu


class Requirement(NamedTuple):
    what: str
    found: bool
    detail: str  # the version or path found, else what is missing and how to install it


def _install(needed_by: str, packages: str) -> str:
    return f"needed by {needed_by}; install: apt-get install {packages}"


def _c_compiler(system: System) -> Requirement:
    for name in ("gcc", "clang", "icx"):
        if name in system.compilers:
            return Requirement("C compiler", True, system.compilers[name])
    return Requirement("C compiler", False, _install("the native probes", "build-essential"))


def _openmp(system: System) -> Requirement:
    # gcc ships libgomp with it; icx has its own runtime; clang needs libomp-dev, which this
    # record cannot see, so clang alone is reported as "not sure" = missing, with the hint.
    if "gcc" in system.compilers:
        return Requirement("OpenMP", True, "gcc -fopenmp (libgomp)")
    if "icx" in system.compilers:
        return Requirement("OpenMP", True, "icx -qopenmp")
    hint = _install("the multi-threaded native probes", "gcc")
    if "clang" in system.compilers:
        hint += " (or libomp-dev for clang)"
    return Requirement("OpenMP", False, hint)


def _mpi(system: System) -> Requirement:
    if system.mpis:
        return Requirement("MPI", True, ", ".join(m.label for m in system.mpis))
    return Requirement(
        "MPI",
        False,
        _install("the MPI probes", "openmpi-bin libopenmpi-dev (or mpich libmpich-dev)"),
    )


def _tool(what: str, key: str, needed_by: str, packages: str) -> Callable[[System], Requirement]:
    def check(system: System) -> Requirement:
        if key in system.tools:
            return Requirement(what, True, system.tools[key])
        return Requirement(what, False, _install(needed_by, packages))

    return check


def _rdma(system: System) -> Requirement:
    devices = [n["name"] for n in system.nics if n.get("kind") == "rdma"]
    if devices:
        return Requirement("RDMA device", True, ", ".join(devices))
    return Requirement("RDMA device", False, "no RDMA device: RDMA probes will be skipped")


def _gpu(system: System) -> Requirement:
    return Requirement(*gpu.requirement(system))


def _nvcc(system: System) -> Requirement:
    return Requirement(*gpu.nvcc_requirement(system))


CHECKS: tuple[Callable[[System], Requirement], ...] = (
    _c_compiler,
    _openmp,
    _mpi,
    _tool("hwloc", "hwloc", "L3/NUMA-aware placement", "hwloc"),
    _tool("numactl", "numactl", "NUMA memory binding", "numactl"),
    _tool("CBLAS", "cblas", "the DGEMM probe", "libopenblas-dev"),
    _tool("hpcc", "hpcc", "HPL/HPCC reference runs", "hpcc"),
    _tool("fio", "fio", "the storage probes", "fio"),
    _tool("perftest", "ib_send_lat", "the RDMA latency/bandwidth probes", "perftest"),
    _rdma,
    _tool("Slurm", "slurm", "multi-node runs under Slurm", "slurm-wlm"),
    _gpu,
    _nvcc,
)


def requirements_report(system: System) -> list[Requirement]:
    """One (what, found, detail) row per requirement, in the order doctor prints them."""
    return [check(system) for check in CHECKS]


def missing_tools(system: System) -> list[str]:
    """The names of the requirements this system lacks."""
    return [row.what for row in requirements_report(system) if not row.found]
