"""MPI implementations: discovery and identification.

An MPI implementation is found three ways: Debian/Ubuntu alternatives (``mpicc.openmpi`` with
``mpirun.openmpi``, ``mpicc.mpich`` with ``mpiexec.mpich``), a plain ``mpicc`` on PATH that is
not one of those, and entries of ``config.toml``::

    [[mpi]]
    name = "intel"
    mpicc = "/opt/intel/oneapi/mpi/latest/bin/mpicc"
    launcher = "/opt/intel/oneapi/mpi/latest/bin/mpirun"
    launcher_flags = ["-genv", "I_MPI_FABRICS", "shm"]

Each is identified by running its own launcher's version query.
"""

from __future__ import annotations

import os
import re
import shutil

from assay.config import read_config
from assay.errors import ToolchainError
from assay.model import MpiInfo
from assay.toolchain.commands import run_text

# (name, compiler wrapper, launcher) as Debian and Ubuntu install them side by side.
ALTERNATIVES = (
    ("openmpi", "mpicc.openmpi", "mpirun.openmpi"),
    ("mpich", "mpicc.mpich", "mpiexec.mpich"),
    ("mvapich", "mpicc.mvapich2", "mpirun.mvapich2"),
)

INSTALL_HINT = (
    "install an MPI: 'apt-get install openmpi-bin libopenmpi-dev' and/or "
    "'apt-get install mpich libmpich-dev', or declare one in ~/.config/assay/config.toml"
)


def identify_launcher(launcher: str) -> tuple[str, str]:
    """(flavor, version) from a launcher's own ``--version`` text."""
    text = run_text([launcher, "--version"])
    if m := re.search(r"\((?:Open MPI|OpenRTE)\)\s+(\S+)", text):
        return "openmpi", m.group(1)
    if m := re.search(r"Intel\(R\) MPI Library.*?Version\s+(\S+)", text, re.S):
        return "intel", m.group(1).rstrip(",")
    if "HYDRA" in text and (m := re.search(r"Version:\s+(\S+)", text)):
        return ("mvapich" if "mvapich" in text.lower() else "mpich"), m.group(1)
    if m := re.search(r"MVAPICH2?\s+(\S+)", text):
        return "mvapich", m.group(1)
    return "unknown", "unknown"


def _mpi_from(name: str, mpicc: str, launcher: str, source: str, flags: list[str]) -> MpiInfo:
    flavor, version = identify_launcher(launcher)
    return MpiInfo(
        name=name,
        version=version,
        mpicc=mpicc,
        launcher=launcher,
        flavor=flavor,
        launcher_flags=flags,
        source=source,
    )


def _config_entries(config: dict) -> list[dict]:
    """The config's [[mpi]] entries, checked by their table."""
    if not config.get("mpi"):
        return []  # the check not imported: pydantic costs 'assay doctor' 0.12 s of CPU
    from assay.config.schema import validate_section
    from assay.toolchain.mpiconfig import SECTION

    return validate_section(SECTION, config["mpi"], "config")


def discover_mpis(config: dict | None = None) -> list[MpiInfo]:
    """Every MPI implementation found on this machine, each once."""
    config = read_config() if config is None else config
    found: list[MpiInfo] = []
    seen_real: set[str] = set()

    for entry in _config_entries(config):
        name, mpicc, launcher = entry["name"], entry["mpicc"], entry["launcher"]
        flags = list(entry.get("launcher_flags", []))
        found.append(_mpi_from(name, mpicc, launcher, "config", flags))
        seen_real.add(os.path.realpath(shutil.which(mpicc) or mpicc))

    for name, cc, launcher in ALTERNATIVES:
        cc_path, launcher_path = shutil.which(cc), shutil.which(launcher)
        if not cc_path or not launcher_path or any(m.name == name for m in found):
            continue
        found.append(_mpi_from(name, cc_path, launcher_path, "alternatives", []))
        seen_real.add(os.path.realpath(cc_path))

    plain = shutil.which("mpicc")
    if plain and os.path.realpath(plain) not in seen_real:
        launcher = shutil.which("mpirun") or shutil.which("mpiexec")
        if launcher:
            mpi = _mpi_from("mpi", plain, launcher, "path", [])
            if mpi.flavor != "unknown" and not any(m.name == mpi.flavor for m in found):
                mpi.name = mpi.flavor
            found.append(mpi)
    return found


def select_mpis(available: list[MpiInfo], wanted: str | list[str]) -> list[MpiInfo]:
    """``"all"`` or a list of names; a name that was not found is an error naming what was."""
    if not available:
        raise ToolchainError("no MPI implementation found", hint=INSTALL_HINT)
    if wanted == "all" or wanted == ["all"]:
        return list(available)
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    by_name = {m.name: m for m in available}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ToolchainError(
            f"MPI {', '.join(unknown)} not found; found: {', '.join(by_name)}", hint=INSTALL_HINT
        )
    return [by_name[n] for n in names]
