"""Compilers and the build cache: native probes compiled once per (source, compiler identity
and version, flags) into ``$ASSAY_HOME/cache/<hash>/``."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from assay.config import assay_home
from assay.errors import ToolchainError
from assay.inputfile import UnreadableFile, open_regular, read_side_text
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


# The key hashes the sources, never the binary (issue 28): whoever could write the cache would
# choose what runs on every node. So the binary's SHA-256 is recorded beside it when it is
# built and checked before each use, and a cache another user could write is refused.
DIGEST_SUFFIX = ".sha256"


DIGEST_RECORD_BYTES = 4096  # a record is a line of 64 hex digits


def file_digest(path: Path) -> str:
    """The SHA-256 of a file of the cache, read through the one bounded reader: a link is not
    followed, and a FIFO planted there does not hang assay (``UnreadableFile``)."""
    h = hashlib.sha256()
    with open_regular(path, follow=False) as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def writable_by_others(path: Path) -> str | None:
    """Why another user could change ``path`` (a link, another owner, group or world write),
    or None. Root's files are trusted: root can change anything anyway."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if st.st_uid not in (os.geteuid(), 0):
        return f"belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"is writable by its group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _refuse_shared(paths: list[Path]) -> None:
    for path in paths:
        why = writable_by_others(path)
        if why:
            raise ToolchainError(
                f"probe cache: {path} {why}: another user could replace a compiled probe that "
                "assay runs on every node; refused",
                hint=f"chmod go-w {path} (and make it yours), or set ASSAY_HOME to a directory "
                "only you can write",
            )


def verified(exe: Path) -> bool:
    """Whether the cached ``exe`` is the binary assay built: False when it has no recorded
    digest (a cache of an older assay: built again); a digest that differs is an error."""
    record = exe.with_name(exe.name + DIGEST_SUFFIX)
    _refuse_shared([exe.parent.parent, exe.parent, exe])
    if not record.exists():
        return False
    _refuse_shared([record])
    try:
        want = read_side_text(record, "probe digest", DIGEST_RECORD_BYTES).strip()
        got = file_digest(exe)
    except UnreadableFile as exc:  # a FIFO, a device, a record too long: not what assay wrote
        raise ToolchainError(
            f"probe cache: {exc}; not running {exe}",
            hint=f"remove {exe.parent} to build it again, and find out who changed it",
        ) from None
    if got != want:
        raise ToolchainError(
            f"probe cache: {exe} is not the binary assay built (SHA-256 {got[:16]}..., "
            f"recorded {want[:16]}...); not running it",
            hint=f"remove {exe.parent} to build it again, and find out who changed it",
        )
    return True


def _write_private(path: Path, text: str) -> None:
    """A small file of the cache: a new temporary (``mkstemp``: O_EXCL, never a link), then
    renamed over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".build-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _make_dirs(out_dir: Path) -> None:
    """The cache and the key's directory, never group- or world-writable (``mode`` is masked
    by the umask, which can only take bits away)."""
    out_dir.parent.parent.mkdir(parents=True, exist_ok=True)
    out_dir.parent.mkdir(mode=0o755, exist_ok=True)
    out_dir.mkdir(mode=0o755, exist_ok=True)


def build_probe(build: Build, mpis: list[MpiInfo], cache_dir: Path | None = None) -> Path:
    """The path of the compiled probe, compiling it only when its key is not cached yet; a
    cached one is used once its digest is checked (see ``verified``)."""
    exe = probe_path(build, mpis, cache_dir)
    if os.path.lexists(exe) and verified(exe):
        return exe
    source = native_source(build.source)
    compiler = compiler_for(build, mpis)
    out_dir = exe.parent
    _make_dirs(out_dir)
    _refuse_shared([out_dir.parent, out_dir])
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
    digest = file_digest(Path(tmp))
    os.replace(tmp, exe)
    _write_private(exe.with_name(exe.name + DIGEST_SUFFIX), digest + "\n")
    _write_private(out_dir / "build.txt", " ".join(argv) + "\n" + compiler.identity + "\n")
    return exe
