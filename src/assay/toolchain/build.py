"""Compilers and the build cache: native probes compiled once per (source, compiler identity
and version, flags) into ``$ASSAY_HOME/cache/<hash>/``."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from assay.config import assay_home
from assay.errors import ToolchainError
from assay.model import Build, MpiInfo
from assay.system.gpu import find_nvcc
from assay.toolchain.commands import first_line, run_text
from assay.toolchain.mpis import INSTALL_HINT


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
    text = run_text([nvcc, "--version"]).strip()
    return Compiler(nvcc, " ".join(text.splitlines()[-2:]) or "unknown")


def compiler_for(build: Build, mpis: list[MpiInfo]) -> Compiler:
    if build.toolchain == "nvcc":
        return nvcc_compiler()
    if build.toolchain == "cc":
        cc = c_compiler()
        return Compiler(cc, first_line([cc, "--version"]))
    for mpi in mpis:
        if mpi.name == build.toolchain:
            wrapped = first_line([mpi.mpicc, "--version"])
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


def probe_path(build: Build, mpis: list[MpiInfo], cache_dir: Path | None = None) -> Path:
    """Where the compiled probe is (or will be): its cache key names the directory."""
    source = native_source(build.source)
    key = cache_key(keyed_text(source), compiler_for(build, mpis), build)
    return (cache_dir or assay_home() / "cache") / key / Path(build.source).stem


def build_probe(build: Build, mpis: list[MpiInfo], cache_dir: Path | None = None) -> Path:
    """The path of the compiled probe, compiling it only when its key is not cached yet."""
    exe = probe_path(build, mpis, cache_dir)
    if exe.exists():
        return exe
    source = native_source(build.source)
    compiler = compiler_for(build, mpis)
    out_dir = exe.parent
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
