"""Compilers and MPI implementations: discovery, identification and a build cache.

An MPI implementation is found three ways: Debian/Ubuntu alternatives (``mpicc.openmpi`` with
``mpirun.openmpi``, ``mpicc.mpich`` with ``mpiexec.mpich``), a plain ``mpicc`` on PATH that is
not one of those, and entries of ``config.toml``::

    [[mpi]]
    name = "intel"
    mpicc = "/opt/intel/oneapi/mpi/latest/bin/mpicc"
    launcher = "/opt/intel/oneapi/mpi/latest/bin/mpirun"
    launcher_flags = ["-genv", "I_MPI_FABRICS", "shm"]

Each is identified by running its own launcher's version query. Native probes are compiled
once per (source, compiler identity and version, flags) into ``$ASSAY_HOME/cache/<hash>/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from assay.config import assay_home, load_config
from assay.errors import ConfigError, ToolchainError
from assay.model import Build, MpiInfo
from assay.system.gpu import find_nvcc

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


def _run(argv: list[str], timeout: float = 10.0) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout + proc.stderr


def _first_line(argv: list[str]) -> str:
    lines = _run(argv).splitlines()
    return lines[0] if lines else "unknown"


def identify_launcher(launcher: str) -> tuple[str, str]:
    """(flavor, version) from a launcher's own ``--version`` text."""
    text = _run([launcher, "--version"])
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


def discover_mpis(config: dict | None = None) -> list[MpiInfo]:
    """Every MPI implementation found on this machine, each once."""
    config = load_config() if config is None else config
    found: list[MpiInfo] = []
    seen_real: set[str] = set()

    for entry in config.get("mpi", []):
        try:
            name, mpicc, launcher = entry["name"], entry["mpicc"], entry["launcher"]
        except KeyError as exc:
            raise ConfigError(f"config.toml: an [[mpi]] entry lacks the key {exc}") from None
        flags = [str(f) for f in entry.get("launcher_flags", [])]
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


def c_compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise ToolchainError("no C compiler found", hint="apt-get install build-essential")
    return cc


def native_source(name: str) -> Path:
    path = Path(str(resources.files("assay") / "native" / name))
    if not path.exists():
        raise ToolchainError(f"native probe source {name} is missing from the package")
    return path


@dataclass(frozen=True)
class Compiler:
    """A compiler command and the identity that keys the cache."""

    command: str
    identity: str  # version text of the compiler (and of the MPI, for wrappers)


def nvcc_compiler() -> Compiler:
    """The nvcc found ($CUDA_HOME/bin, PATH, /usr/local/cuda/bin), keyed by its full version
    text: a CUDA upgrade rebuilds the GPU probes."""
    nvcc = find_nvcc()
    if not nvcc:
        raise ToolchainError(
            "nvcc not found in $CUDA_HOME/bin, on PATH or at /usr/local/cuda/bin/nvcc",
            hint="install the CUDA toolkit, or set CUDA_HOME to where it is",
        )
    text = _run([nvcc, "--version"]).strip()
    return Compiler(nvcc, " ".join(text.splitlines()[-2:]) or "unknown")


def compiler_for(build: Build, mpis: list[MpiInfo]) -> Compiler:
    if build.toolchain == "nvcc":
        return nvcc_compiler()
    if build.toolchain == "cc":
        cc = c_compiler()
        return Compiler(cc, _first_line([cc, "--version"]))
    for mpi in mpis:
        if mpi.name == build.toolchain:
            wrapped = _first_line([mpi.mpicc, "--version"])
            return Compiler(mpi.mpicc, f"{mpi.flavor} {mpi.version} {wrapped}")
    raise ToolchainError(f"toolchain {build.toolchain!r} not found", hint=INSTALL_HINT)


def keyed_text(source: Path) -> bytes:
    """What a build's cache key hashes of its sources: the probe's source, then every header
    beside it (probe.h, jsonl.h, ...) by name and content, in name order. A change to a shared
    header recompiles every probe that may include it; naming each one keeps a rename or a
    move of text between headers from hashing the same."""
    text = source.read_bytes()
    for header in sorted(source.parent.glob("*.h")):
        text += b"\0" + header.name.encode() + b"\0" + header.read_bytes()
    return text


def cache_key(source_text: bytes, compiler: Compiler, build: Build) -> str:
    h = hashlib.sha256()
    for part in (source_text, compiler.command.encode(), compiler.identity.encode()):
        h.update(part)
        h.update(b"\0")
    h.update("\0".join(build.flags + build.libs).encode())
    return h.hexdigest()[:16]


def _remove(path: str) -> None:
    # A failed compiler may already have deleted its output (gcc does, on a full disk).
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def build_probe(build: Build, mpis: list[MpiInfo], cache_dir: Path | None = None) -> Path:
    """The path of the compiled probe, compiling it only when its key is not cached yet."""
    source = native_source(build.source)
    compiler = compiler_for(build, mpis)
    key = cache_key(keyed_text(source), compiler, build)
    out_dir = (cache_dir or assay_home() / "cache") / key
    exe = out_dir / Path(build.source).stem
    if exe.exists():
        return exe
    out_dir.mkdir(parents=True, exist_ok=True)
    # Compile into a temporary name, then rename: two runs building at once never see half a file.
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".build-")
    os.close(fd)
    argv = [compiler.command, *build.flags, str(source), "-o", tmp, *build.libs]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        _remove(tmp)
        raise ToolchainError(f"could not run {compiler.command}: {exc}") from None
    if proc.returncode != 0:
        _remove(tmp)
        raise ToolchainError(
            f"compiling {build.source} with {compiler.command} failed:\n"
            f"  $ {' '.join(argv)}\n{proc.stderr.strip()}"
        )
    os.chmod(tmp, 0o755)
    os.replace(tmp, exe)
    (out_dir / "build.txt").write_text(" ".join(argv) + "\n" + compiler.identity + "\n")
    return exe
