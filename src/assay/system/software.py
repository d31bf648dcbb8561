"""Software facts: OS, compilers, GPUs (through nvidia-smi) and the tools probes call.

Same contract as ``collectors``: ``f(ctx) -> fact | None``, reasons go to ``ctx.note``.
Programs are found with ``ctx.which`` and run with ``ctx.run`` (short timeout, never raises).
"""

from __future__ import annotations

import csv
import os
import shlex
from typing import Any

from assay.system._context import Context

COMPILERS: tuple[str, ...] = ("gcc", "clang", "icx", "nvcc", "gfortran")

# (key, executable, version arguments). None records the path instead: those programs have no
# cheap version flag (numactl on Debian 12 rejects --version; hpcc would start a run). For a
# key listed twice, the first executable found wins.
TOOLS: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("fio", "fio", ("--version",)),
    ("hpcc", "hpcc", None),
    ("xhpl", "xhpl", None),
    ("ib_send_lat", "ib_send_lat", None),
    ("ibv_devinfo", "ibv_devinfo", None),
    ("slurm", "sinfo", ("--version",)),
    ("slurm", "srun", None),
    ("slurm", "sbatch", None),
    ("hwloc", "hwloc-info", ("--version",)),
    ("hwloc", "lstopo-no-graphics", ("--version",)),
    ("numactl", "numactl", None),
    ("nvidia-smi", "nvidia-smi", None),
)

# Tools that read a configuration file even for --version, and the variable that names it:
# every Slurm command retries for 60 s when SLURM_CONF names a missing file (the version is
# then left unknown rather than waited for to the run timeout on every assay start).
CONFIG_FILE_VARIABLE: dict[str, str] = {"slurm": "SLURM_CONF"}

# CBLAS headers as Debian installs them (libopenblas-dev puts cblas.h under the multiarch dir).
# Plain cblas.h first: it is what a probe includes; cblas-openblas.h etc. only show a BLAS is there.
CBLAS_HEADER_GLOBS: tuple[str, ...] = (
    "usr/include/cblas.h",
    "usr/include/*/cblas.h",
    "usr/include/*/cblas*.h",
)

GPU_QUERY = "name,memory.total,driver_version,clocks.max.sm"


def os_name(ctx: Context) -> str | None:
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        text = ctx.read(path)
        if not text:
            continue
        fields = _os_release(text)
        name = fields.get("PRETTY_NAME") or " ".join(
            v for v in (fields.get("NAME"), fields.get("VERSION")) if v
        )
        if name:
            return name
    ctx.note("os: no PRETTY_NAME in /etc/os-release or /usr/lib/os-release")
    return None


def _os_release(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep or key.strip().startswith("#"):
            continue
        try:
            parts = shlex.split(value)  # values are shell-quoted
        except ValueError:
            parts = [value.strip().strip("\"'")]
        fields[key.strip()] = " ".join(parts)
    return fields


def _version_line(name: str, output: str | None) -> str | None:
    lines = [line.strip() for line in (output or "").splitlines() if line.strip()]
    if not lines:
        return None
    if name == "nvcc":
        # nvcc's first line is "nvcc: NVIDIA (R) Cuda compiler driver"; the release is later.
        return next((line for line in lines if "release" in line), lines[-1])
    return lines[0]


def compilers(ctx: Context) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in COMPILERS:
        path = ctx.which(name)
        if not path:
            continue
        version = _version_line(name, ctx.run([path, "--version"]))
        if version is None:
            ctx.note(f"compilers: {path} --version failed")
            version = f"unknown ({path})"
        found[name] = version
    return found


def tools(ctx: Context) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, executable, version_args in TOOLS:
        if key in found:
            continue
        path = ctx.which(executable)
        if not path:
            continue
        version = None
        if version_args is not None and not _config_missing(ctx, key, executable):
            version = _version_line(key, ctx.run([path, *version_args]))
        found[key] = version or path
    cblas = _cblas(ctx)
    if cblas:
        found["cblas"] = cblas
    return found


def missing_config_file(variable: str) -> str | None:
    """The file the environment's ``variable`` names, when it names one that does not exist."""
    value = os.environ.get(variable, "")
    return value if value and not os.path.exists(value) else None


def _config_missing(ctx: Context, key: str, executable: str) -> bool:
    """Whether the variable naming ``key``'s configuration file names a missing one (noted)."""
    variable = CONFIG_FILE_VARIABLE.get(key)
    missing = missing_config_file(variable) if variable else None
    if missing is None:
        return False
    ctx.note(f"{key}: {variable}={missing} names no file: {executable} --version not run "
             "(it would wait for the file)")  # fmt: skip
    return True


def _cblas(ctx: Context) -> str | None:
    """Where CBLAS comes from: a header to compile against, else libopenblas's linker name."""
    for pattern in CBLAS_HEADER_GLOBS:
        headers = sorted(ctx.root.glob(pattern))
        if headers:
            return "/" + str(headers[0].relative_to(ctx.root))
    ldconfig = ctx.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if ctx.path(p).exists()), None
    )
    listing = ctx.run([ldconfig, "-p"]) if ldconfig else None
    for line in (listing or "").splitlines():
        # The unversioned "libopenblas.so" is what libopenblas-dev adds; the runtime alone
        # (libopenblas.so.0) cannot be linked with -lopenblas.
        if line.strip().startswith("libopenblas.so ") and "=>" in line:
            return line.split("=>", 1)[1].strip()
    return None


def _na(value: str) -> str | None:
    return None if value in ("", "[N/A]", "N/A", "[Not Supported]") else value


def _float(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def gpus(ctx: Context) -> list[dict[str, Any]] | None:
    """NVIDIA GPUs; [] when nvidia-smi is absent (no GPU is a fact, not a failure)."""
    path = ctx.which("nvidia-smi")
    if not path:
        return []
    out = ctx.run([path, f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"])
    if out is None:
        ctx.note("gpus: nvidia-smi is present but the query failed (driver not loaded?)")
        return None
    found = []
    for row in csv.reader(out.splitlines(), skipinitialspace=True):
        if len(row) != 4:
            if row:
                ctx.note(f"gpus: unexpected nvidia-smi line {','.join(row)!r}")
            continue
        name, memory_mib, driver, clock_mhz = (field.strip() for field in row)
        memory = _float(memory_mib) if _na(memory_mib) else None
        clock = _float(clock_mhz) if _na(clock_mhz) else None
        found.append(
            {
                "name": name,
                "memory_bytes": int(memory * 2**20) if memory is not None else None,
                "driver_version": _na(driver),
                "clock_max_hz": clock * 1e6 if clock is not None else None,
            }
        )
    return found
